/**
 * The outbox's state for the metrics scrape (billing_outbox_backlog, billing_outbox_oldest_age_seconds): one
 * statement on the partial index of undispatched events (events_undispatched_index), the count capped so a huge
 * backlog costs a bounded scan. Events on test clocks count in the backlog but not in the age (their time is the
 * clock's, not the wall's).
 */
import type { MikroORM } from '@mikro-orm/postgresql';

import type { OutboxState } from './metrics.ts';

export const outboxBacklogCap = 100_000;

export function outboxProbe(orm: MikroORM): () => Promise<OutboxState> {
  return async () => {
    const [row] = await orm.em
      .fork()
      .getConnection()
      .execute<{ backlog: string | number; oldest: Date | string | null }[]>(
        `select (select count(*) from (select 1 from events where dispatched_at is null limit ${outboxBacklogCap}) pending) as backlog,
              (select created_at from events where dispatched_at is null and test_clock_id is null order by id limit 1) as oldest`,
      );
    const oldest = row?.oldest ? new Date(row.oldest).getTime() : null;
    return {
      backlog: Number(row?.backlog ?? 0),
      oldestAgeSeconds: oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
    };
  };
}
