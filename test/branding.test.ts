/**
 * Branding (domain/branding.ts, services/accounts/branding.ts, api/routes/branding.ts): business
 * name, brand colour and logo are validated (a refusal changes nothing), one account's
 * branding is its own, the logo is served as uploaded, and the branding is what customers
 * see: the receipt email captured by the test SMTP server (From name, colour, logo), the
 * invoice PDF's text, the pay page and the portal's answer.
 */
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { seedCustomerAndPlan, startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { solidPng } from './helpers/png.ts';
import { eventually } from './helpers/temporal.ts';

describe('branding', () => {
  let engine: TestEngine;
  let other: Tenant;
  const png = solidPng(48, 24, [200, 30, 90]);
  beforeAll(async () => {
    engine = await startTestEngine();
    other = await engine.signUp({ name: 'Other Co' });
  });
  afterAll(async () => engine?.close());

  const branding = (tenant?: Tenant) => engine.call('GET', '/v1/settings/branding', undefined, tenant?.headers);

  it('starts from the account name and the default colour, with no logo', async () => {
    const answer = await branding();
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'branding',
      business_name: null,
      brand_color: null,
      logo_url: null,
      effective: { color: '#1a56db', logo_url: null },
    });
    expect(answer.body.effective.name).toBeTruthy();
  });

  it('refuses a bad colour, an SVG, a GIF, bytes that are no image, a lying data URL and an oversized logo, and changes nothing', async () => {
    const before = (await branding()).body;
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>').toString(
      'base64',
    );
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ brand_color: 'red' }, /brand_color/],
      [{ brand_color: '#12345' }, /brand_color/],
      [{ brand_color: '#12345g' }, /brand_color/],
      [{ logo: svg, business_name: 'Should not stick' }, /PNG or JPEG/],
      [{ logo: `data:image/svg+xml;base64,${svg}` }, /PNG or JPEG/],
      [{ logo: Buffer.from('GIF89a\x01\x00\x01\x00').toString('base64') }, /PNG or JPEG/],
      [{ logo: 'not base64 at all!' }, /base64/],
      [{ logo: `data:image/jpeg;base64,${png.toString('base64')}` }, /says image\/jpeg but the bytes are image\/png/],
      [{ logo: Buffer.concat([png, Buffer.alloc(65 * 1024)]).toString('base64') }, /at most 64 KB/],
      [{ business_name: '' }, /business_name/],
      [{ business_name: 'x'.repeat(101) }, /business_name/],
      [{ unknown: 1 }, /unknown|unrecognized/i],
    ];
    for (const [body, message] of cases) {
      const answer = await engine.call('PATCH', '/v1/settings/branding', body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.body.error).toBe('invalid_request');
      expect(answer.body.message).toMatch(message);
    }
    expect((await branding()).body).toEqual(before);
  });

  it('owners set name, colour and logo; the logo is served as uploaded; another account sees its own', async () => {
    const key = await engine.call('POST', '/v1/api_keys', { name: 'k' });
    const byKey = await engine.call(
      'PATCH',
      '/v1/settings/branding',
      { brand_color: '#000000' },
      { authorization: `Bearer ${key.body.secret}` },
    );
    expect(byKey.status).toBe(403);
    const member = await engine.call('POST', '/v1/users', {
      email: 'member@example.com',
      password: 'Member!2345-secret',
      role: 'member',
    });
    expect(member.status).toBe(201);
    const memberSession = await engine.login('member@example.com', 'Member!2345-secret');
    expect(
      (await engine.call('PATCH', '/v1/settings/branding', { brand_color: '#000000' }, memberSession.headers)).status,
    ).toBe(403);
    expect((await engine.call('GET', '/v1/settings/branding', undefined, memberSession.headers)).status).toBe(200);

    const saved = await engine.call('PATCH', '/v1/settings/branding', {
      business_name: 'Acme Rockets',
      brand_color: '#C2185B',
      logo: png.toString('base64'),
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({
      business_name: 'Acme Rockets',
      brand_color: '#c2185b',
      effective: { name: 'Acme Rockets', color: '#c2185b' },
    });
    const logoUrl: string = saved.body.logo_url;
    expect(logoUrl).toMatch(
      new RegExp(`^${engine.config.publicUrl}/branding/${engine.tenant.accountId}/logo/[0-9a-f]{16}$`),
    );
    const served = await engine.app.request(logoUrl.replace(engine.config.publicUrl, ''));
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);

    const events = (await engine.call('GET', '/v1/events?type=account.updated')).body.data;
    expect(events[0].data.object.settings.branding).toMatchObject({
      business_name: 'Acme Rockets',
      brand_color: '#c2185b',
      logo: { content_type: 'image/png', size: png.length },
    });

    // Omitted fields stay; another account's branding and logo are its own.
    expect(
      (await engine.call('PATCH', '/v1/settings/branding', { business_name: 'Acme Rockets Ltd' })).body,
    ).toMatchObject({ brand_color: '#c2185b', logo_url: logoUrl });
    const theirs = await branding(other);
    expect(theirs.body).toMatchObject({
      business_name: null,
      brand_color: null,
      logo_url: null,
      effective: { name: 'Other Co', color: '#1a56db' },
    });
    expect((await engine.app.request(`/branding/${other.accountId}/logo/0000000000000000`)).status).toBe(404);
    expect((await engine.call('PATCH', '/v1/settings/branding', { logo: null }, other.headers)).status).toBe(200);
    expect((await engine.app.request(logoUrl.replace(engine.config.publicUrl, ''))).status).toBe(200);
  });

  it("customers see it: the receipt email's From, colour and logo, the invoice PDF, the portal", async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status).toBe(201);
    const receipt = await eventually(
      async () => engine.mail.messages.find((m) => m.parsed.subject?.includes('Receipt for invoice')),
      (m) => m !== undefined,
      15_000,
    );
    const html = String(receipt!.parsed.html);
    expect(receipt!.parsed.from?.value[0]?.name).toBe('Acme Rockets Ltd');
    expect(receipt!.parsed.text).toContain('to Acme Rockets Ltd on');
    expect(html).toContain('background:#c2185b');
    expect(html).toMatch(
      new RegExp(
        `<img src="${engine.config.publicUrl}/branding/${engine.tenant.accountId}/logo/[0-9a-f]{16}" alt="Acme Rockets Ltd"`,
      ),
    );

    const invoice =
      (await engine.call('GET', `/v1/invoices?subscription=${created.body.id}`)).body.data?.[0] ??
      (await engine.call('GET', '/v1/invoices')).body.data[0];
    const pdf = await engine.app.request(String(invoice.pdf).replace(engine.config.publicUrl, ''));
    expect(pdf.status).toBe(200);
    const bytes = new Uint8Array(await pdf.arrayBuffer());
    const raw = Buffer.from(bytes).toString('latin1'); // unpdf takes the buffer over
    const { text } = await extractText(await getDocumentProxy(bytes), { mergePages: true });
    expect(text).toContain('Acme Rockets Ltd');
    // The logo is embedded as an image XObject.
    expect(raw).toMatch(/\/Subtype \/Image/);

    const link = await engine.call('POST', `/v1/customers/${customerId}/portal_link`, {});
    const portal = await engine.call('GET', '/v1/portal', undefined, {
      authorization: '',
      'x-portal-token': link.body.url.split('#')[1],
    });
    expect(portal.body.account).toEqual({
      name: 'Acme Rockets Ltd',
      brand_color: '#c2185b',
      brand_text_color: '#ffffff',
      logo_url: expect.stringMatching(/^\/branding\/.+\/logo\/[0-9a-f]{16}$/),
    });
  });

  it('the pay page shows the name, the colour and the logo from its own origin', async () => {
    const request = await engine.call('POST', '/v1/payments', {
      account_id: engine.tenant.accountId,
      amount: 1500,
      currency: 'USD',
      customer_email: 'payer@example.com',
    });
    expect(request.status).toBe(201);
    const page = await engine.app.request(String(request.body.payment_url).replace(engine.config.publicUrl, ''));
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('<strong>Acme Rockets Ltd</strong> requests');
    expect(body).toContain('button{background:#c2185b;color:#ffffff}');
    expect(body).toMatch(
      /<header class="brand" data-brand-color="#c2185b"><img src="\/branding\/[^"]+\/logo\/[0-9a-f]{16}" alt="Acme Rockets Ltd logo">/,
    );
    expect(page.headers.get('content-security-policy')).toContain("img-src 'self'");
    // The request's email names the business too.
    const mail = await eventually(
      async () => engine.mail.messages.find((m) => m.envelopeTo.includes('payer@example.com')),
      (m) => m !== undefined,
      15_000,
    );
    expect(mail!.parsed.subject).toContain('Acme Rockets Ltd requests');
  });
});
