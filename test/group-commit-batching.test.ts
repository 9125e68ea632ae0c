/**
 * How the group committer of single meter events (services/usage/group-commit.ts) forms its batches: a lone event
 * is sent on the next turn, with no timer; while `maxInFlight` statements run, arrivals wait and the first to finish
 * sends them as one; accounts and modes never share a statement. The store here records the batches it is given
 * and answers when told to (the real store's statement is tested in test/meter-events-group-commit and usage-store).
 */
import { describe, expect, it } from 'vitest';

import { SingleEventCommitter } from '../services/usage/group-commit.ts';
import type { IngestOutcome, MeterEventInput } from '../services/usage/store.ts';

function recordingStore() {
  const batches: { accountId: string; livemode: boolean; identifiers: string[]; release: () => void }[] = [];
  return {
    batches,
    ingest(q: { accountId: string; livemode: boolean; events: MeterEventInput[] }): Promise<IngestOutcome[]> {
      return new Promise((resolve) =>
        batches.push({
          accountId: q.accountId,
          livemode: q.livemode,
          identifiers: q.events.map((e) => e.identifier),
          release: () => resolve(q.events.map((e) => ({ status: 'duplicate', identifier: e.identifier }))),
        }),
      );
    },
  };
}

const event = (identifier: string, accountId = 'acct_a', livemode = false) => ({
  accountId,
  livemode,
  event: { eventName: 'calls', customerId: 'cus_1', timestamp: null, identifier, payload: {} },
});
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit batching', () => {
  it('sends a lone event on the next turn, and what arrives while the statements are taken as one batch', async () => {
    const store = recordingStore();
    const committer = new SingleEventCommitter(store, { maxInFlight: 1 });
    const first = committer.ingestOne(event('e1'));
    await turn();
    expect(store.batches.map((b) => b.identifiers)).toEqual([['e1']]);
    // While e1's statement runs: five arrivals over several turns wait for it.
    const waiting = [];
    for (let i = 2; i <= 6; i++) {
      waiting.push(committer.ingestOne(event(`e${i}`)));
      await turn();
    }
    expect(store.batches).toHaveLength(1);
    store.batches[0]!.release();
    expect((await first).identifier).toBe('e1');
    // The finished statement schedules the next on a turn of its own.
    await turn();
    await turn();
    expect(store.batches.map((b) => b.identifiers)).toEqual([['e1'], ['e2', 'e3', 'e4', 'e5', 'e6']]);
    store.batches[1]!.release();
    expect((await Promise.all(waiting)).map((o) => o.identifier)).toEqual(['e2', 'e3', 'e4', 'e5', 'e6']);
    expect([committer.batches, committer.events]).toEqual([2, 6]);
  });

  it('runs up to maxInFlight statements at once, sends a full batch at once, and keeps accounts and modes apart', async () => {
    const store = recordingStore();
    const committer = new SingleEventCommitter(store, { maxInFlight: 2, maxBatch: 3 });
    const answers = [committer.ingestOne(event('a1'))];
    await turn();
    answers.push(committer.ingestOne(event('a2')));
    await turn();
    // Two statements under way: the next arrivals wait, until three of them make a full batch.
    answers.push(committer.ingestOne(event('a3')), committer.ingestOne(event('a4')));
    await turn();
    expect(store.batches.map((b) => b.identifiers)).toEqual([['a1'], ['a2']]);
    answers.push(committer.ingestOne(event('a5')));
    expect(store.batches.map((b) => b.identifiers)).toEqual([['a1'], ['a2'], ['a3', 'a4', 'a5']]);
    // Another account and the other mode: statements of their own.
    answers.push(committer.ingestOne(event('b1', 'acct_b')), committer.ingestOne(event('l1', 'acct_a', true)));
    await turn();
    expect(store.batches.slice(3).map((b) => [b.accountId, b.livemode, b.identifiers])).toEqual([
      ['acct_b', false, ['b1']],
      ['acct_a', true, ['l1']],
    ]);
    for (const batch of store.batches) batch.release();
    expect((await Promise.all(answers)).map((o) => o.identifier)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'b1', 'l1']);
  });
});
