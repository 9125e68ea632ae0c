/**
 * Branding (docs/dashboard.md#branding): GET/PATCH /v1/settings/branding (business name,
 * brand colour, logo upload), and GET /branding/{account}/logo/{version}, the public
 * address pages, emails and PDFs show the logo from.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { Hono } from 'hono';

import { Account } from '../../db/entities/index.ts';
import { brandOf, logoPath } from '../../domain/branding.ts';
import { changeBranding, loadLogo } from '../../services/accounts/branding.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const BrandingSchema = z
  .object({
    object: z.literal('branding'),
    business_name: z.string().nullable().openapi({ description: "Shown to customers; null: the account's name" }),
    brand_color: z.string().nullable().openapi({ description: '#rrggbb; null: the default' }),
    logo_url: z
      .string()
      .nullable()
      .openapi({ description: 'Where the engine serves the uploaded logo (public), or null' }),
    effective: z
      .object({ name: z.string(), color: z.string(), logo_url: z.string().nullable() })
      .openapi({ description: 'What customers see, defaults applied' }),
  })
  .openapi('Branding');

const PatchBody = z
  .object({
    business_name: z.string().trim().min(1).max(100).nullable().optional(),
    brand_color: z
      .string()
      .max(7)
      .nullable()
      .optional()
      .openapi({ description: 'A hex colour like #1a56db; null: the default' }),
    logo: z.string().max(120_000).nullable().optional().openapi({
      description:
        'A PNG or JPEG of at most 64 KB and 2048×2048 pixels, in base64 or as a data: URL, that decodes whole (SVG is refused: it can carry scripts); null removes the logo',
    }),
  })
  .strict()
  .openapi({ example: { business_name: 'Acme Studio', brand_color: '#1a56db' } });

const getBranding = createRoute({
  method: 'get',
  path: '/',
  tags: ['Settings'],
  summary: 'Branding customers see: business name, colour and logo',
  description: 'Used on the pay page, the customer portal, customer emails and invoice PDFs, in both modes.',
  responses: { 200: { description: 'Branding', ...json(BrandingSchema) }, ...errorResponses(401) },
});
const patchBranding = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Settings'],
  summary: 'Change the branding',
  description:
    'Owners and admins. Omitted fields stay as they are; null resets one. The logo is checked by its bytes (PNG or JPEG) and decoded whole (a corrupt file is 400), at most 64 KB and 2048×2048 pixels.',
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Branding', ...json(BrandingSchema) }, ...errorResponses(400, 401, 403) },
});

function serialize(account: Account, publicUrl: string): z.infer<typeof BrandingSchema> {
  const branding = account.settings.branding ?? {};
  const brand = brandOf(account, publicUrl);
  return {
    object: 'branding',
    business_name: branding.business_name ?? null,
    brand_color: branding.brand_color ?? null,
    logo_url: brand.logoUrl,
    effective: { name: brand.name, color: brand.color, logo_url: brand.logoUrl },
  };
}

/** /v1/settings/branding. */
export function brandingApp({ config, context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(getBranding, async (c) => {
      const { accountId } = await accountScope(c, orm);
      return c.json(serialize(await orm.em.fork().findOneOrFail(Account, { id: accountId }), config.publicUrl), 200);
    })
    .openapi(patchBranding, async (c) => {
      requireActor(c, ['admin', 'owner']);
      const { accountId } = await accountScope(c, orm);
      const account = await changeBranding(orm.em.fork(), accountId, c.req.valid('json'));
      return c.json(serialize(account, config.publicUrl), 200);
    });
}

/**
 * GET /branding/{account}/logo/{version}: the logo, public (pages and emails show it), only
 * under the version it names (the first 16 hex digits of its SHA-256): an old or wrong
 * version answers 404, so an address always shows the bytes it was made for.
 */
export function brandingPublicApp({ context: { orm } }: AppDeps) {
  return new Hono().get('/:accountId/logo/:version', async (c) => {
    const accountId = c.req.param('accountId');
    if (!/^[\w-]{1,64}$/.test(accountId) || !/^[0-9a-f]{16}$/.test(c.req.param('version')))
      return c.text('Not found', 404);
    const logo = await loadLogo(orm.em.fork(), accountId);
    if (!logo || logoPath(accountId, logo.sha256) !== `/branding/${accountId}/logo/${c.req.param('version')}`)
      return c.text('Not found', 404);
    return c.body(new Uint8Array(logo.data), 200, {
      'content-type': logo.contentType,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'",
      'cache-control': 'public, max-age=31536000, immutable',
    });
  });
}
