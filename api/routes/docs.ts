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
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true, tryItOutEnabled: true });</script>
</body>
</html>`;

export function docsApp() {
  return new Hono()
    .get('/', (c) => c.html(page))
    .get('/assets/:file', (c) => {
      const file = c.req.param('file');
      const type = assets[file];
      if (!type) return c.notFound();
      return c.body(fs.readFileSync(path.join(assetsDir, file)), 200, { 'content-type': type, 'cache-control': 'public, max-age=86400' });
    });
}
