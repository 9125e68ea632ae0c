/**
 * Usage billed in arrears by the subscription workflow (#28), through the real API on a test clock: a
 * metered plan on a sum meter with graduated tiers, free units and a price per dimension value, over three
 * periods. Events go through POST /v1/meter_events; each renewal waits the usage grace window (default
 * 3600 s), closes the period just ended and bills its usage; the invoices are checked against a reference
 * computed here by hand (micro-units, not the engine's pricing). A late event inside the grace window counts;
 * one after the close is refused period_invoiced. Also the plan API's 400s for metered plans, the usage so far
 * on the subscription read, a new subscription's grace window from the account's setting, and a resume after
 * the paused period ended billing the interrupted period's usage.
 */
import { Worker } from '@temporalio/worker';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { graduatedReference } from './helpers/usage.ts';

describe('usage billing', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('refuses metered plans that cannot bill, naming the field', async () => {
    const { call, make } = await clockTenant(engine, 'Metered plans');
    const meter = await make('/v1/meters', {
      display_name: 'Tokens',
      event_name: 'tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model'],
    });
    const calls = await make('/v1/meters', { display_name: 'Calls', event_name: 'calls', aggregation: 'count' });
    const plan = (body: Record<string, unknown>) =>
      call('POST', '/v1/plans', { name: 'Usage', currency: 'USD', interval: 'month', ...body });
    const refused = async (body: Record<string, unknown>, message: RegExp) => {
      const answer = await plan(body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.message).toMatch(message);
    };
    await refused({ usage_type: 'metered', amount: 5 }, /meter: required for a metered plan/);
    await refused({ usage_type: 'metered', amount: 5, meter: 'mtr_nope' }, /meter: no such meter mtr_nope/);
    await refused(
      { usage_type: 'metered', pricing_scheme: 'percentage', percentage: '2.9', meter: calls.id },
      /percentage price needs a sum meter; .* aggregates by count/,
    );
    await refused({ pricing_scheme: 'percentage', percentage: '2.9' }, /percentage is for metered plans only/);
    await refused(
      { amount: 5, meter: meter.id, free_quantity: '10' },
      /meter: only a metered plan takes it.*free_quantity: only a metered plan/,
    );
    await refused(
      { usage_type: 'metered', amount: 5, meter: meter.id, group_by: 'region' },
      /group_by: "region" is not one of meter .*'s group_by properties \(model\)/,
    );
    await refused(
      { usage_type: 'metered', amount: 5, meter: meter.id, dimension_prices: { large: { amount: 9 } } },
      /dimension_prices: give group_by/,
    );
    await refused(
      {
        usage_type: 'metered',
        amount: 5,
        meter: meter.id,
        group_by: 'model',
        dimension_prices: { large: { tiers: [] } },
      },
      /dimension_prices.large.tiers: a per_unit plan's dimension price takes amount/,
    );
    await refused(
      { usage_type: 'metered', amount: 5, meter: meter.id, free_quantity: '1.0000001' },
      /free_quantity: must be a non-negative decimal/,
    );
    await refused(
      { usage_type: 'metered', type: 'one_time', amount: 5, meter: meter.id },
      /one_time plan cannot be metered/,
    );
    await refused(
      { usage_type: 'metered', pricing_scheme: 'percentage', meter: meter.id, percentage: '101' },
      /percentage: must be a decimal string from "0" to "100"/,
    );

    const fee = await make('/v1/plans', {
      name: 'Payments',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      pricing_scheme: 'percentage',
      percentage: '2.9',
      fixed_amount_decimal: '30',
    });
    expect(fee).toMatchObject({
      usage_type: 'metered',
      meter: meter.id,
      pricing_scheme: 'percentage',
      percentage: '2.9',
      fixed_amount_decimal: '30',
      amount: 0,
      free_quantity: null,
    });
    expect((await call('POST', `/v1/plans/${fee.id}`, { percentage: '3' })).body.message).toMatch(
      /percentage: a plan's price never changes/,
    );
    // An inactive meter takes no new plans.
    await make(`/v1/meters/${calls.id}/deactivate`, {}, 200);
    await refused({ usage_type: 'metered', amount: 1, meter: calls.id }, /meter: .* is inactive/);
    // A metered plan takes no quantity on a subscription.
    const customer = await make('/v1/customers', { email: 'q@example.com', payment_method: 'pm_card_visa' });
    const answer = await call('POST', '/v1/subscriptions', { customer_id: customer.id, plan: fee.id, quantity: 3 });
    expect(answer.status).toBe(400);
    expect(answer.body.message).toMatch(/quantity: plan .* is metered/);

    // The usage grace window: the default hour, set per mode.
    expect((await call('GET', '/v1/settings/usage')).body).toEqual({
      object: 'usage_settings',
      usage_grace_period_seconds: 3600,
      late_events: 'refuse',
    });
    expect((await call('POST', '/v1/settings/usage', { usage_grace_period_seconds: 600 })).body).toEqual({
      object: 'usage_settings',
      usage_grace_period_seconds: 600,
      late_events: 'refuse',
    });
    expect((await call('GET', '/v1/settings/usage')).body.usage_grace_period_seconds).toBe(600);
    expect((await call('POST', '/v1/settings/usage', { usage_grace_period_seconds: 8 * 86_400 })).status).toBe(400);
  });

  it("bills each period's usage on the next invoice, after the grace window, per dimension value with graduated tiers and free units", async () => {
    const { call, make, advance, t } = await clockTenant(engine, 'Tokens by the million');
    const clock = await make('/v1/test_clocks', { frozen_time: '2033-01-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'ada@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', {
      display_name: 'Tokens',
      event_name: 'tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model'],
    });
    const smallTiers = [
      { upTo: 1000, unit: 0.5 },
      { upTo: null, unit: 0.25 },
    ];
    const largeTiers = [
      { upTo: 1000, unit: 2 },
      { upTo: null, unit: 1 },
    ];
    const plan = await make('/v1/plans', {
      name: 'Tokens',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 1000, unit_amount_decimal: '0.5' },
        { up_to: 'inf', unit_amount_decimal: '0.25' },
      ],
      free_quantity: '100',
      group_by: 'model',
      dimension_prices: {
        large: {
          tiers: [
            { up_to: 1000, unit_amount: 2 },
            { up_to: 'inf', unit_amount: 1 },
          ],
        },
      },
    });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub).toMatchObject({ status: 'active', current_period_end: '2033-02-01T00:00:00.000Z' });
    let n = 0;
    const send = async (timestamp: string, tokens: string, model?: string, status = 201) => {
      const answer = await call('POST', '/v1/meter_events', {
        event_name: 'tokens',
        customer: customer.id,
        timestamp,
        identifier: `ev-${++n}`,
        payload: { tokens, ...(model ? { model } : {}) },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      return answer.body;
    };
    const invoices = async () =>
      [...(await call('GET', `/v1/invoices?subscription=${sub.id}`)).body.data].reverse() as any[];
    const usageOf = (invoice: any) =>
      invoice.lines.map((line: any) => [
        line.description,
        line.quantity_decimal,
        line.amount,
        line.period_start,
        line.period_end,
        line.meter,
      ]);

    // The first invoice bills no usage (nothing in arrears yet): nothing due.
    expect((await invoices()).map((i) => [i.total, i.lines.length])).toEqual([[0, 0]]);

    // January: two models, and an event without the dimension (priced by the plan's own tiers). Events are
    // stamped no later than 5 minutes past the clock's now, so the clock moves first.
    await advance(clock.id, '2033-01-25T00:00:00Z');
    await send('2033-01-05T10:00:00Z', '700.5', 'small');
    await send('2033-01-20T10:00:00Z', '600', 'small');
    await send('2033-01-21T10:00:00Z', '1500', 'large');
    await send('2033-01-22T10:00:00Z', '50');
    // 30 minutes past the boundary: inside the grace window, no renewal yet, and a late January event still counts.
    await advance(clock.id, '2033-02-01T00:30:00Z');
    expect(await invoices()).toHaveLength(1);
    await send('2033-01-31T23:59:00Z', '10', 'small');
    await advance(clock.id, '2033-02-01T01:00:00Z');
    const [, february] = await invoices();
    const jan = { start: '2033-01-01T00:00:00.000Z', end: '2033-02-01T00:00:00.000Z' };
    const smallJan = graduatedReference('1310.5', smallTiers, 100); // 1210.5 billed: 1000 × 0.5 + 210.5 × 0.25 = 552.625
    const largeJan = graduatedReference('1500', largeTiers, 100); // 1400 billed: 1000 × 2 + 400 × 1 = 2400
    expect([smallJan, largeJan]).toEqual([
      { exact: 552.625, amount: 553 },
      { exact: 2400, amount: 2400 },
    ]);
    expect(usageOf(february)).toEqual([
      ['Tokens (model: none): usage 50, 50 free', '50', 0, jan.start, jan.end, meter.id],
      ['Tokens (model: large): usage 1500, 100 free', '1500', largeJan.amount, jan.start, jan.end, meter.id],
      ['Tokens (model: small): usage 1310.5, 100 free', '1310.5', smallJan.amount, jan.start, jan.end, meter.id],
    ]);
    expect(february.lines[2].breakdown).toEqual([
      expect.objectContaining({
        tier: 0,
        from_unit: 1,
        up_to: 1000,
        quantity: 1000,
        unit_amount_decimal: '0.5',
        amount_decimal: '500',
      }),
      expect.objectContaining({
        tier: 1,
        from_unit: 1001,
        up_to: null,
        quantity: 210.5,
        quantity_decimal: '210.5',
        unit_amount_decimal: '0.25',
        amount_decimal: '52.625',
      }),
    ]);
    expect(february).toMatchObject({
      status: 'paid',
      total: smallJan.amount + largeJan.amount,
      amount_paid: smallJan.amount + largeJan.amount,
      period_start: jan.end,
    });
    // The PDF prints the usage lines through the same line rendering, tiers under them.
    const pdf = await engine.app.request(`/v1/invoices/${february.id}/pdf`, {
      headers: { ...t.headers, 'x-sandbox-mode': 'true' },
    });
    expect(pdf.status).toBe(200);
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(await pdf.arrayBuffer())), {
      mergePages: true,
    });
    const flat = text.replace(/\s+/g, ' ');
    for (const expected of [
      'Tokens (model: small): usage 1310.5, 100 free',
      'Units 1–1000: 1000 × $0.005',
      'Units 1–1000: 1000 × $0.02',
      'Units 1001 and up: 210.5 × $0.0025',
      '$5.53',
      '$24.00',
    ])
      expect(flat, expected).toContain(expected);
    // January is closed: an event in it is refused, and cancelling one is too.
    expect(JSON.stringify(await send('2033-01-31T23:59:30Z', '5', 'small', 409))).toContain('period_invoiced');
    expect((await call('POST', '/v1/meter_events/ev-1/cancel')).status).toBe(409);

    // February and March, and the invoices that start March and April.
    await advance(clock.id, '2033-02-12T00:00:00Z');
    await send('2033-02-10T00:00:00Z', '2000.25', 'small');
    await send('2033-02-11T00:00:00Z', '1', 'large');
    // The upcoming invoice shows February's usage so far, as the March renewal will bill it.
    const upcoming = await call('GET', `/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);
    expect(
      upcoming.body.lines.map((l: any) => [l.meter, l.quantity_decimal, l.amount, l.period_start, l.period_end]),
    ).toEqual([
      [meter.id, '1', 0, '2033-02-01T00:00:00.000Z', '2033-03-01T00:00:00.000Z'],
      [
        meter.id,
        '2000.25',
        graduatedReference('2000.25', smallTiers, 100).amount,
        '2033-02-01T00:00:00.000Z',
        '2033-03-01T00:00:00.000Z',
      ],
    ]);
    await advance(clock.id, '2033-03-01T01:00:00Z');
    await advance(clock.id, '2033-03-04T00:00:00Z');
    await send('2033-03-03T00:00:00Z', '1000.75', 'large');
    await advance(clock.id, '2033-04-01T01:00:00Z');
    const [, , march, april] = await invoices();
    const smallFeb = graduatedReference('2000.25', smallTiers, 100); // 1900.25 billed: 500 + 900.25 × 0.25 = 725.0625 → 725
    const largeMar = graduatedReference('1000.75', largeTiers, 100); // 900.75 × 2 = 1801.5 → 1802, half away from zero
    expect(usageOf(march).map((l: unknown[]) => l.slice(1, 3))).toEqual([
      ['1', 0],
      ['2000.25', smallFeb.amount],
    ]);
    expect(usageOf(april).map((l: unknown[]) => l.slice(1, 5))).toEqual([
      ['1000.75', largeMar.amount, '2033-03-01T00:00:00.000Z', '2033-04-01T00:00:00.000Z'],
    ]);
    expect([march.total, april.total]).toEqual([725, 1802]);
    expect([march, april].every((i) => i.status === 'paid')).toBe(true);

    // Recorded with the patch, the history replays against this code.
    const history = await engine.env.client.workflow.getHandle(sub.id).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: sub.id },
      history,
    );
  }, 120_000);

  it("a new subscription waits the account's grace window; a resume after the period bills the usage before and during the pause", async () => {
    const { call, make, advance } = await clockTenant(engine, 'Calls paused');
    expect((await call('POST', '/v1/settings/usage', { usage_grace_period_seconds: 60 })).status).toBe(200);
    const clock = await make('/v1/test_clocks', { frozen_time: '2035-01-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'kim@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', { display_name: 'Calls', event_name: 'calls', aggregation: 'count' });
    const plan = await make('/v1/plans', {
      name: 'Calls',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      amount: 3,
    });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    const invoices = async () =>
      [...(await call('GET', `/v1/invoices?subscription=${sub.id}`)).body.data].reverse() as any[];
    const calls = async (count: number, timestamp: string) => {
      for (let i = 0; i < count; i++)
        await make('/v1/meter_events', {
          event_name: 'calls',
          customer: customer.id,
          identifier: `${timestamp}-${i}`,
          timestamp,
        });
    };
    await advance(clock.id, '2035-01-10T00:00:00Z');
    await calls(2, '2035-01-09T00:00:00Z');
    // A minute past the boundary: the 60 s window of the account (not the 3600 s default) has passed, January is billed.
    await advance(clock.id, '2035-02-01T00:01:30Z');
    expect((await invoices()).map((i) => i.total)).toEqual([0, 6]);
    await advance(clock.id, '2035-02-10T00:00:00Z');
    await calls(4, '2035-02-09T00:00:00Z');
    expect((await call('POST', `/v1/subscriptions/${sub.id}/pause`, {})).status).toBe(200);
    // Paused past the period's end: no renewal; a call while paused still counts.
    await advance(clock.id, '2035-03-05T00:00:00Z');
    expect(await invoices()).toHaveLength(2);
    await calls(1, '2035-03-04T00:00:00Z');
    const resumed = await call('POST', `/v1/subscriptions/${sub.id}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const [, , resume] = await invoices();
    expect(resume).toMatchObject({ total: 15, status: 'paid' });
    expect(resume.lines).toEqual([
      expect.objectContaining({
        meter: meter.id,
        quantity_decimal: '5',
        amount: 15,
        period_start: '2035-02-01T00:00:00.000Z',
        period_end: '2035-03-05T00:00:00.000Z',
      }),
    ]);
    // Closed to the resume: a late call in it is refused.
    expect(
      (
        await call('POST', '/v1/meter_events', {
          event_name: 'calls',
          customer: customer.id,
          identifier: 'late',
          timestamp: '2035-03-04T12:00:00Z',
        })
      ).status,
    ).toBe(409);
    // Recorded with usage-pause, the history replays against this code.
    const history = await engine.env.client.workflow.getHandle(sub.id).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: sub.id },
      history,
    );
  }, 60_000);

  it("a cancel bills the last period's usage so far on a final invoice and closes it", async () => {
    const { call, make, advance } = await clockTenant(engine, 'Calls on a final invoice');
    const clock = await make('/v1/test_clocks', { frozen_time: '2034-05-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'lin@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', { display_name: 'Calls', event_name: 'calls', aggregation: 'count' });
    const plan = await make('/v1/plans', {
      name: 'Calls',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      amount: 3,
    });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    await advance(clock.id, '2034-05-10T00:00:00Z');
    for (let i = 0; i < 5; i++)
      await make('/v1/meter_events', {
        event_name: 'calls',
        customer: customer.id,
        identifier: `call-${i}`,
        timestamp: '2034-05-09T00:00:00Z',
      });
    // The subscription read shows the period's usage so far on the metered item; lists do not aggregate.
    const read = await call('GET', `/v1/subscriptions/${sub.id}`);
    expect(read.body.items).toEqual([
      expect.objectContaining({
        plan: plan.id,
        usage: {
          meter: meter.id,
          quantity: '5',
          period_start: '2034-05-01T00:00:00.000Z',
          period_end: '2034-06-01T00:00:00.000Z',
        },
      }),
    ]);
    expect(
      (await call('GET', `/v1/subscriptions?customer=${customer.id}`)).body.data[0].items[0].usage,
    ).toBeUndefined();
    const canceled = await call('POST', `/v1/subscriptions/${sub.id}/cancel`, {});
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    const invoices = [...(await call('GET', `/v1/invoices?subscription=${sub.id}`)).body.data].reverse() as any[];
    expect(invoices.map((i) => [i.total, i.status])).toEqual([
      [0, 'paid'],
      [15, 'paid'],
    ]);
    expect(invoices[1].lines).toEqual([
      expect.objectContaining({
        meter: meter.id,
        quantity_decimal: '5',
        amount: 15,
        period_start: '2034-05-01T00:00:00.000Z',
        period_end: '2034-05-10T00:00:00.000Z',
      }),
    ]);
    // Closed: an event of that period is refused now.
    const late = await call('POST', '/v1/meter_events', {
      event_name: 'calls',
      customer: customer.id,
      identifier: 'call-late',
      timestamp: '2034-05-09T12:00:00Z',
    });
    expect(late.status).toBe(409);
  }, 60_000);
});
