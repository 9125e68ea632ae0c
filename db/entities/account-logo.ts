import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** An account's uploaded logo (domain/branding.ts): one per account, PNG or JPEG, at most 64 KB. */
export const AccountLogo = defineEntity({
  name: 'AccountLogo',
  tableName: 'account_logos',
  properties: {
    accountId: p.string().primary(),
    contentType: p.string(),
    data: p.blob(),
    sha256: p.string().length(64),
    size: p.integer(),
    updatedAt: p.datetime(),
  },
});
export type AccountLogo = InferEntity<typeof AccountLogo>;
