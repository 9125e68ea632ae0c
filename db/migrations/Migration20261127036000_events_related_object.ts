import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v1/events?related_object= (a subscription's or a customer's timeline): the events whose object
 * is that one or names it. One GIN index over the ids an event's object carries (its own and the
 * customer, subscription and invoice it points at) answers `array[…] @> array[id]`; the expression
 * must stay identical to the one api/routes/events.ts queries with (relatedIdsSql).
 */
export class Migration20261127036000_events_related_object extends Migration {
  override name = 'Migration20261127036000_events_related_object';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "events_related_ids_gin" on "events" using gin ((array[data->'object'->>'id', data->'object'->>'customer_id', data->'object'->>'customer', data->'object'->>'subscription_id', data->'object'->>'subscription', data->'object'->>'invoice']));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "events_related_ids_gin";`);
  }
}
