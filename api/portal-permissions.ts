import type { Account, CustomerPortalPermissions } from '../db/entities/index.ts';

/**
 * What an account's customers may do in the portal and on hosted pages (docs/dashboard.md, the
 * customer_portal setting): the account's own choices over these defaults. One place, read by the
 * portal's routes and by the one-off invoice pay page (promotion codes).
 */
export const defaultPortalPermissions: CustomerPortalPermissions = {
  plan_changes: false,
  cancellation: true,
  resume: true,
  quantity_changes: false,
  promotion_codes: false,
  plans: null,
};

export const portalPermissionsOf = (
  account: Pick<Account, 'settings'> | null | undefined,
): CustomerPortalPermissions => ({
  ...defaultPortalPermissions,
  ...(account?.settings.customer_portal ?? {}),
});
