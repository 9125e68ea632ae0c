import { Migration } from '@mikro-orm/migrations';

/**
 * A bound workflow's report to its test clock in one statement (services/test-clocks/registry.ts reportToClock): the
 * function writes the workflow's row and, when that cleared the last busy entry of the round the clock waits for,
 * ends the round under the clock's registry row lock. In one round trip, the lock is held for microseconds rather than
 * across the client round trips of a transaction, during which every other report of the instant waits on it holding
 * one of the worker's pooled connections (10 by default). Each statement of a
 * volatile PL/pgSQL function takes a fresh snapshot, so the check after the lock sees every report committed before.
 * Returns -1 when the clock has no registry row (its writers signal it), the round to signal, or 0.
 */
export class Migration20261127151000_test_clock_report_function extends Migration {
  override name = 'Migration20261127151000_test_clock_report_function';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function test_clock_report(
  p_clock varchar, p_workflow varchar, p_wake timestamptz, p_known timestamptz, p_done boolean
) returns integer language plpgsql volatile as $$
declare
  v_account varchar;
  v_livemode boolean;
  v_old timestamptz;
  v_found boolean;
  v_new timestamptz;
  v_round integer;
begin
  select account_id, livemode into v_account, v_livemode from test_clock_registries where clock_id = p_clock;
  if not found then
    return -1;
  end if;
  select busy_at into v_old from test_clock_entries where clock_id = p_clock and workflow_id = p_workflow for update;
  v_found := found;
  if p_done then
    if not v_found then
      return 0;
    end if;
    delete from test_clock_entries where clock_id = p_clock and workflow_id = p_workflow;
    if v_old is null then
      return 0;
    end if;
  elsif v_found then
    update test_clock_entries set wake_at = p_wake,
      busy_at = case when busy_at is not null and p_known >= busy_at then null else busy_at end,
      known = greatest(coalesce(known, p_known), p_known), reported_at = now()
    where clock_id = p_clock and workflow_id = p_workflow returning busy_at into v_new;
    if v_old is null or v_new is not null then
      return 0;
    end if;
  else
    insert into test_clock_entries (clock_id, account_id, livemode, workflow_id, wake_at, busy_at, known)
    values (p_clock, v_account, v_livemode, p_workflow, p_wake, null, p_known)
    on conflict (clock_id, workflow_id) do update set wake_at = excluded.wake_at,
      known = greatest(coalesce(test_clock_entries.known, excluded.known), excluded.known), reported_at = now();
    return 0;
  end if;
  -- This report cleared a busy entry: under the clock's lock, was it the last of the round the clock waits for?
  select awaiting_round into v_round from test_clock_registries where clock_id = p_clock for update;
  if v_round is null then
    return 0;
  end if;
  if exists (select 1 from test_clock_entries where clock_id = p_clock and busy_at is not null) then
    return 0;
  end if;
  update test_clock_registries set awaiting_round = null where clock_id = p_clock;
  return v_round;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists test_clock_report(varchar, varchar, timestamptz, timestamptz, boolean);`);
  }
}
