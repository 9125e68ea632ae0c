/**
 * The one look of every customer-facing page (the pay page, the billing-details
 * page): server-rendered HTML and CSS, no client framework. Every value is escaped
 * by hono/html; each response sends its own Content-Security-Policy with a
 * per-response nonce for its style and script, `form-action 'self'` and no framing.
 */
import { randomBytes } from 'node:crypto';

import type { Context } from 'hono';
import { html, raw } from 'hono/html';

import type { Brand } from '../../domain/branding.ts';

export type Html = ReturnType<typeof html>;

const styles = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;background:#f3f4f8;color:#1a1f36;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;display:flex;flex-direction:column;align-items:center;padding:48px 16px}
main{width:100%;max-width:440px;background:#fff;border-radius:14px;box-shadow:0 1px 3px rgba(26,31,54,.08),0 12px 32px rgba(26,31,54,.08);padding:32px}
.from{margin:0;color:#697386;font-size:.95rem}
.from strong{color:#1a1f36}
.amount{margin:.25rem 0 1rem;font-size:2.4rem;font-weight:700;letter-spacing:-.02em}
dl{margin:0 0 1.5rem;display:grid;grid-template-columns:auto 1fr;gap:.35rem 1rem;font-size:.92rem}
dt{color:#697386}dd{margin:0;word-break:break-word}
fieldset{border:0;margin:0 0 1.25rem;padding:0}
legend{font-weight:600;margin-bottom:.6rem;padding:0}
.method{display:flex;align-items:center;gap:.75rem;border:1px solid #e3e8ee;border-radius:10px;padding:.7rem .9rem;margin-bottom:.5rem;cursor:pointer}
.method:hover{border-color:#a3acb9}
.method:has(input:checked){border-color:#635bff;box-shadow:0 0 0 1px #635bff;background:#f7f7ff}
.method input{accent-color:#635bff;width:1.05rem;height:1.05rem;margin:0}
.method .name{flex:1;font-weight:500}
.method code{font-size:.76rem;color:#5e6878;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.hint{display:block;font-size:.78rem;color:#5e6878}
button{width:100%;border:0;border-radius:10px;background:#635bff;color:#fff;font:inherit;font-weight:600;font-size:1.05rem;padding:.85rem;cursor:pointer}
button:hover{background:#5146e0}
button:disabled{background:#a5a0ff;cursor:progress}
.alert{border-radius:10px;padding:.8rem 1rem;margin:0 0 1.25rem;font-size:.95rem}
.alert.error{background:#fff0f0;color:#a4161a;border:1px solid #f6c4c4}
.promotion-code{display:grid;grid-template-columns:1fr auto;gap:.35rem .5rem;margin:0 0 1.25rem}.promotion-code label{grid-column:1/-1;font-weight:600;font-size:.92rem}
.promotion-code input{font:inherit;border:1px solid #cfd7df;border-radius:10px;padding:.55rem .8rem;min-width:0}.promotion-code button{width:auto;font-size:.95rem;padding:.55rem 1.1rem}
.notice{background:#e3f9e9;color:#0e7a3a;border-radius:10px;padding:.6rem 1rem;margin:0 0 1rem;font-size:.92rem}
.field{display:block;margin:0 0 1rem;font-weight:600;font-size:.92rem}
.field input,.field select{display:block;width:100%;margin-top:.35rem;font:inherit;font-weight:400;border:1px solid #cfd7df;border-radius:10px;padding:.6rem .8rem;background:#fff;color:inherit}
.code{font:700 1.6rem/1.2 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.12em;text-align:center;background:#f3f4f8;border-radius:10px;padding:.6rem;margin:.5rem 0 1rem}
a.button{display:block;text-align:center;border-radius:10px;background:#635bff;color:#fff;font-weight:600;padding:.85rem;text-decoration:none}
a.back{color:#4b45c6;font-size:.92rem}
.state{text-align:center}
.icon{width:56px;height:56px;border-radius:50%;display:flex;align-items:center;justify-content:center;margin:0 auto 1rem;font-size:1.8rem;font-weight:700}
.icon.ok{background:#e3f9e9;color:#0e7a3a}.icon.off{background:#f1f2f6;color:#697386}.icon.bad{background:#fff0f0;color:#a4161a}
h1{font-size:1.35rem;margin:0 0 .5rem}
p{margin:.25rem 0}
.muted{color:#697386;font-size:.92rem}
.badge{display:inline-block;background:#fff4e5;color:#9a5b00;border-radius:6px;padding:.1rem .5rem;font-size:.75rem;font-weight:600;margin-left:.4rem;vertical-align:middle}
.test-mode{width:100%;max-width:440px;background:#fff4e5;color:#9a5b00;border:1px solid #f5d49a;border-radius:10px;padding:.55rem 1rem;margin:0 0 1rem;text-align:center;font-weight:600;font-size:.9rem}
footer{margin-top:1.25rem;color:#5e6878;font-size:.8rem}
`;

/** What every page of a mode that moves no real money says first (test mode, or live mode on the sandbox processor). */
export const testModeBanner = 'TEST MODE — no real money moves';

/** The account's colours over the defaults (domain/branding.ts: the colour is checked as #rrggbb when saved and again here). */
function brandStyles(brand: Brand): string {
  if (!/^#[0-9a-f]{6}$/i.test(brand.color) || !/^#[0-9a-f]{3,6}$/i.test(brand.onColor)) return '';
  return `button{background:${brand.color};color:${brand.onColor}}button:hover{background:${brand.color};filter:brightness(.92)}button:disabled{background:${brand.color};opacity:.6}
.method:has(input:checked){border-color:${brand.color};box-shadow:0 0 0 1px ${brand.color};background:#fff}.method input{accent-color:${brand.color}}
.brand{width:100%;max-width:440px;display:flex;align-items:center;gap:.75rem;margin:0 0 1rem;padding:.75rem 1rem;border-radius:10px;background:${brand.color};color:${brand.onColor};font-weight:700}
.brand img{height:32px;width:auto;max-width:160px;object-fit:contain}`;
}

/** The footer of customer-facing pages; a page for account owners (the CLI's approval) says what it is instead. */
export const paymentPageFooter = 'Secure payment page · Billing engine';

export function page(
  c: Context,
  status: number,
  title: string,
  body: Html,
  script: string | null = null,
  testMode = false,
  brand?: Brand,
  footer = paymentPageFooter,
) {
  const nonce = randomBytes(16).toString('base64');
  c.header(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
  );
  // The page shows one customer's request: never cached, never indexed.
  c.header('Cache-Control', 'no-store');
  c.header('X-Robots-Tag', 'noindex');
  return c.html(
    html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>${title}</title>
<style nonce="${nonce}">${raw(styles)}${raw(brand ? brandStyles(brand) : '')}</style>
</head>
<body>
${testMode ? html`<div class="test-mode" role="note">${testModeBanner}</div>` : ''}
${brand ? html`<header class="brand" data-brand-color="${brand.color}">${brand.logoUrl ? html`<img src="${brand.logoUrl}" alt="${brand.name} logo">` : ''}<span>${brand.name}</span></header>` : ''}
<main>
${body}
</main>
<footer>${footer}</footer>
${script ? html`<script nonce="${nonce}">${raw(script)}</script>` : ''}
</body>
</html>`,
    status as 200,
  );
}

/** A centred result: an icon, a title and lines of text. */
export function stateCard(icon: 'ok' | 'off' | 'bad', mark: string, title: string, lines: Html[]) {
  return html`<div class="state"><div class="icon ${icon}" aria-hidden="true">${mark}</div><h1>${title}</h1>${lines.map((line) => html`<p class="muted">${line}</p>`)}</div>`;
}

/** A form sent from another site (a forged post) is refused; the browser tells us where it came from. */
export function isCrossSitePost(c: Context, publicUrl: string): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = c.req.header('origin');
  // "null" is what browsers send under Referrer-Policy: no-referrer (our default header).
  if (origin === undefined || origin === 'null') return false;
  return origin !== new URL(c.req.url).origin && origin !== new URL(publicUrl).origin;
}
