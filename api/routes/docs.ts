import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { Hono } from 'hono';

/**
 * Interactive API docs at /docs: Swagger UI served from the installed
 * swagger-ui-dist package (no CDN, so it works offline), reading /openapi.json.
 */
const assetsDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const assets: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Billing engine API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="docs" data-openapi-url="/openapi.json"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>`;

/** Started from a file, not inline, so the policy allows no inline script. */
const init = `window.ui = SwaggerUIBundle({ url: document.getElementById('docs').dataset.openapiUrl, dom_id: '#docs', deepLinking: true, tryItOutEnabled: true });\n`;

/**
 * The page's Content-Security-Policy: everything from this origin only; Swagger UI sets
 * inline style attributes and draws its icons as data: SVGs, so styles may be inline and
 * images data:. No inline script, no framing, no plugins.
 */
export const docsContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function docsApp() {
  return new Hono()
    .use(async (c, next) => {
      await next();
      c.header('Content-Security-Policy', docsContentSecurityPolicy);
    })
    .get('/', (c) => c.html(page))
    .get('/assets/init.js', (c) =>
      c.body(init, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }),
    )
    .get('/assets/:file', (c) => {
      const file = c.req.param('file');
      const type = assets[file];
      if (!type) return c.notFound();
      return c.body(fs.readFileSync(path.join(assetsDir, file)), 200, {
        'content-type': type,
        'cache-control': 'public, max-age=86400',
      });
    });
}
