import { Migration } from '@mikro-orm/migrations';

/**
 * test_clock_report(clock, workflow, wake, known, done): a bound workflow's report to its test clock's registry in ONE
 * statement. It writes the workflow's row and returns 1 when that cleared a busy entry (-1: the clock has no registry
 * row, 0: nothing cleared). The end of the round is decided by statements of their own, after this one has committed
 * (services/test-clocks/registry.ts endRoundIfQuiet): a look without a lock first, so only the last few reports of an
 * instant take the clock's registry row lock. With the lock inside the function (a first version, never released)
 * every report of an instant took it and held it until its commit was flushed, so the reports queued on it, each
 * holding one of the worker's pooled connections (10 by default) that the renewals of the same instant wait for.
 */
export class Migration20261127152000_test_clock_report_unlocked extends Migration {
  override name = 'Migration20261127152000_test_clock_report_unlocked';

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
    return case when v_old is null then 0 else 1 end;
  elsif v_found then
    update test_clock_entries set wake_at = p_wake,
      busy_at = case when busy_at is not null and p_known >= busy_at then null else busy_at end,
      known = greatest(coalesce(known, p_known), p_known), reported_at = now()
    where clock_id = p_clock and workflow_id = p_workflow returning busy_at into v_new;
    return case when v_old is not null and v_new is null then 1 else 0 end;
  end if;
  insert into test_clock_entries (clock_id, account_id, livemode, workflow_id, wake_at, busy_at, known)
  values (p_clock, v_account, v_livemode, p_workflow, p_wake, null, p_known)
  on conflict (clock_id, workflow_id) do update set wake_at = excluded.wake_at,
    known = greatest(coalesce(test_clock_entries.known, excluded.known), excluded.known), reported_at = now();
  return 0;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists test_clock_report(varchar, varchar, timestamptz, timestamptz, boolean);`);
  }
}
