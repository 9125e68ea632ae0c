/**
 * The activities of a test clock's workflow that read and write its registry in PostgreSQL (issue #29,
 * services/test-clocks/registry.ts; patch `test-clock-registry-in-table` in workflows/test-clock.ts). Each runs as a
 * local activity of the clock's workflow, with the Temporal client of the running activity (its ticks are direct
 * signals).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';

import {
  adoptClockEntries,
  applyClockMessages,
  checkClockBusy,
  type ClockMessage,
  type ClockRound,
  finalTickClock,
  stepClock,
  tickClockInstant,
} from '../services/test-clocks/registry.ts';
import type { ClockEntry } from '../workflows/test-clock.ts';

export function createTestClockActivities(deps: { orm: MikroORM }) {
  const em = () => deps.orm.em.fork();
  return {
    /** The clock's workflow starts reading its table, with the entries a run before it carried (returns whether the clock still exists). */
    async adoptClockEntries(input: {
      clockId: string;
      accountId: string;
      entries: Array<[string, ClockEntry]>;
    }): Promise<boolean> {
      return adoptClockEntries(em(), input);
    },
    /** Registrations and reports the clock heard as signals (sent before its table was its registry); returns the round they ended, if any. */
    async applyClockMessages(input: { clockId: string; messages: ClockMessage[] }): Promise<number | null> {
      return applyClockMessages(em(), input.clockId, input.messages);
    },
    /** One step of an advance: wait for what is busy, or move to the next instant up to `to`, marking what is due busy. */
    async stepClock(input: {
      clockId: string;
      accountId: string;
      round: number;
      time: string;
      to: string | null;
    }): Promise<ClockRound> {
      return stepClock(em(), input);
    },
    /** The ticks of instant `at` to what is due then and has not reported (an activity of its own: many signals). */
    async tickClockInstant(input: {
      clockId: string;
      accountId: string;
      at: string;
    }): Promise<{ ticked: number; gone: number }> {
      return tickClockInstant(em(), Context.current().client, input);
    },
    /** While the clock waits for a round: what is still busy (ticked again if asked), when its entries last reported, how many wait their turn. */
    async checkClockBusy(input: {
      clockId: string;
      accountId: string;
      retick?: boolean;
      askQueued?: boolean;
    }): Promise<{ busy: number; sample: string[]; lastReportAt: string | null; queued: number }> {
      return checkClockBusy(em(), Context.current().client, input);
    },
    /** The end of an advance: what has not seen the target hears it. */
    async finalTickClock(input: { clockId: string; accountId: string; to: string }): Promise<number> {
      return finalTickClock(em(), Context.current().client, input);
    },
  };
}
