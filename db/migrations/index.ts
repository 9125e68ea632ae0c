import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';

/** Every migration, in order. A new one is written by `npm run migration:create -- <name>` and added here. */
export const migrations = [{ name: 'Migration20261122000000_initial', class: Migration20261122000000_initial }];
