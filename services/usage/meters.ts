/**
 * Meters (POST /v1/meters...): create, rename, deactivate and reactivate, each with its event
 * (billing.meter.*) in the same transaction. An event_name is unique among a mode's active meters
 * (a partial unique index): an event names its meter by it.
 */
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Meter, type MeterAggregation } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { serializeMeter } from '../../objects/meter.ts';
import { recordEvent } from '../events/record.ts';
import type { MeterRef } from './store.ts';

type Scope = { accountId: string; livemode: boolean };

export interface MeterInput {
  display_name: string;
  event_name: string;
  aggregation: MeterAggregation;
  value_property?: string | undefined;
  group_by?: string[] | undefined;
}

/** What the usage store needs of a meter. */
export function meterRef(meter: Meter): MeterRef {
  return {
    id: meter.id,
    eventName: meter.eventName,
    aggregation: meter.aggregation,
    valueProperty: meter.valueProperty,
    groupBy: meter.groupBy,
  };
}

function eventNameTaken(eventName: string): ApiError {
  return new ApiError(
    'conflict',
    `event_name: an active meter already counts "${eventName}"; deactivate it first, or choose another event_name.`,
  );
}

export async function createMeter(em: EntityManager, scope: Scope, input: MeterInput): Promise<Meter> {
  const groupBy = input.group_by ?? [];
  if (new Set(groupBy).size !== groupBy.length) throw new ApiError('invalid_request', 'group_by: each property once.');
  const valueProperty = input.value_property ?? 'value';
  if (groupBy.includes(valueProperty) && input.aggregation !== 'count')
    throw new ApiError(
      'invalid_request',
      `group_by: "${valueProperty}" is the value_property; a meter groups by dimension properties, not by its value.`,
    );
  const now = new Date();
  const meter = em.create(Meter, {
    id: newId('meter'),
    ...scope,
    displayName: input.display_name,
    eventName: input.event_name,
    aggregation: input.aggregation,
    valueProperty,
    groupBy,
    status: 'active',
    createdAt: now,
    updatedAt: now,
  });
  try {
    await em.transactional(async (tx) => {
      await tx.flush();
      await recordEvent(tx, {
        ...scope,
        type: 'billing.meter.created',
        object: serializeMeter(meter),
        transactionId: null,
      });
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw eventNameTaken(input.event_name);
    throw error;
  }
  return meter;
}

export async function findOwnMeter(em: EntityManager, scope: Scope, id: string): Promise<Meter> {
  const meter = await em.findOne(Meter, { id, ...scope });
  if (meter) return meter;
  const elsewhere = await em.fork().count(Meter, { id, accountId: scope.accountId, livemode: !scope.livemode });
  if (elsewhere === 0) throw new ApiError('not_found', 'No such meter.');
  const [there, yours] = scope.livemode ? ['sandbox mode', 'live'] : ['live mode', 'sandbox'];
  throw new ApiError('not_found', `No such meter: ${id} exists in ${there}; you are using a ${yours} credential.`);
}

/** Renames a meter (its display_name: the only thing that changes; Stripe's update). */
export async function renameMeter(em: EntityManager, scope: Scope, id: string, displayName: string): Promise<Meter> {
  await findOwnMeter(em.fork(), scope, id);
  return em.transactional(async (tx) => {
    const meter = await tx.findOneOrFail(
      Meter,
      { id, ...scope },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (meter.displayName === displayName) return meter;
    const before = meter.displayName;
    meter.displayName = displayName;
    meter.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, {
      ...scope,
      type: 'billing.meter.updated',
      object: serializeMeter(meter),
      transactionId: null,
      previousAttributes: { display_name: before },
    });
    return meter;
  });
}

/** Deactivates or reactivates a meter; a no-op (no event) when it already is. */
export async function setMeterStatus(
  em: EntityManager,
  scope: Scope,
  id: string,
  status: 'active' | 'inactive',
): Promise<Meter> {
  await findOwnMeter(em.fork(), scope, id);
  try {
    return await em.transactional(async (tx) => {
      const meter = await tx.findOneOrFail(
        Meter,
        { id, ...scope },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      if (meter.status === status) return meter;
      meter.status = status;
      meter.updatedAt = new Date();
      await tx.flush();
      await recordEvent(tx, {
        ...scope,
        type: status === 'active' ? 'billing.meter.reactivated' : 'billing.meter.deactivated',
        object: serializeMeter(meter),
        transactionId: null,
      });
      return meter;
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw eventNameTaken((await findOwnMeter(em.fork(), scope, id)).eventName);
    throw error;
  }
}
