/**
 * The dashboard (dashboard/, a React SPA built by Vite into dashboard/dist) at /dashboard.
 * Hashed assets are served immutable; every other path under /dashboard answers the
 * SPA's index.html (client-side routes). Each answer carries a Content-Security-Policy
 * that allows scripts and styles from this origin only: Vite's build has no inline
 * script. The app is a client of the public API with the cookie session
 * (api/auth/browser-session.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Hono } from 'hono';

export const dashboardDistDir = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url));

export const dashboardContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const types: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

const notBuilt = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title></head>
<body><main><h1>The dashboard is not built</h1><p><code>npm start</code> and <code>npm test</code> build it; or run <code>npm run dashboard:build</code>.</p></main></body></html>`;

export function dashboardPage() {
  return new Hono()
    .use(async (c, next) => {
      await next();
      c.header('Content-Security-Policy', dashboardContentSecurityPolicy);
      c.header('X-Frame-Options', 'DENY');
    })
    .get('/assets/:file', (c) => {
      const file = c.req.param('file');
      const type = types[path.extname(file)];
      const full = path.join(dashboardDistDir, 'assets', file);
      if (!type || file.includes('/') || file.includes('..') || !fs.existsSync(full)) return c.notFound();
      return c.body(fs.readFileSync(full), 200, {
        'content-type': type,
        'cache-control': 'public, max-age=31536000, immutable',
      });
    })
    .get('*', (c) => {
      const index = path.join(dashboardDistDir, 'index.html');
      if (!fs.existsSync(index)) return c.html(notBuilt, 503);
      c.header('Cache-Control', 'no-cache');
      return c.html(fs.readFileSync(index, 'utf8'));
    });
}
