import { z } from '@hono/zod-openapi';

/** The account's balance in this mode: what it can pay out or refund now (available) and what is still on its way (pending), per currency. */
const money = z.object({ amount: z.number().int(), currency: z.string() });

export const BalanceSchema = z
  .object({
    object: z.literal('balance'),
    available: z.array(money).openapi({ description: 'Per currency: money that can be paid out or refunded now' }),
    pending: z.array(money).openapi({
      description: "Per currency: payments' money not yet available (see available_on of its balance transactions)",
    }),
    livemode: z.boolean(),
  })
  .openapi('Balance');

export function serializeBalance(
  rows: { currency: string; available: number; pending: number }[],
  livemode: boolean,
): z.infer<typeof BalanceSchema> {
  const sorted = [...rows].sort((a, b) => a.currency.localeCompare(b.currency));
  return {
    object: 'balance',
    available: sorted.map((row) => ({ amount: Number(row.available), currency: row.currency })),
    pending: sorted.map((row) => ({ amount: Number(row.pending), currency: row.currency })),
    livemode,
  };
}
