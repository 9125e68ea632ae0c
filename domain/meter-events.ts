/**
 * The shape check of one meter event (POST /v1/meter_events and /batch), before the usage store
 * checks what needs the database (meter, customer, window, value, watermark). Hand-written instead
 * of a zod schema: a batch of 1,000 events runs it 1,000 times per request (docs/usage.md#costs).
 */
import { newId } from './ids.ts';

export const maxBatchEvents = 1000;
/** The batch route's body limit (its own; other routes keep BODY_LIMIT_BYTES): 1,000 events of up to ~1 KB. */
export const batchBodyLimitBytes = 1024 * 1024;
export const maxPayloadProperties = 20;
export const maxPropertyValueLength = 250;
export const maxIdentifierLength = 100;

export interface ParsedMeterEvent {
  eventName: string;
  customerId: string;
  timestamp: Date | null;
  identifier: string;
  payload: Record<string, unknown>;
}

const eventKeys = new Set(['event_name', 'customer', 'timestamp', 'identifier', 'payload']);

/** A timestamp: unix seconds (a number or a string of digits) or an ISO 8601 instant; null when absent. */
export function parseEventTimestamp(value: unknown): Date | null | string {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || value > 253402300799)
      return 'timestamp: unix seconds from 0 to 253402300799.';
    return new Date(Math.round(value * 1000));
  }
  if (typeof value === 'string') {
    if (/^\d{1,12}(\.\d{1,6})?$/.test(value)) return parseEventTimestamp(Number(value));
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
      const date = new Date(value);
      if (!Number.isNaN(date.getTime())) return date;
    }
  }
  return 'timestamp: unix seconds (1795392000) or an ISO 8601 instant with its offset (2026-11-27T03:00:00Z).';
}

/** One event of a request body: the event, or why its shape is refused (a message naming the field). */
export function parseMeterEvent(raw: unknown): ParsedMeterEvent | string {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return 'an event is a JSON object with event_name, customer, and optionally timestamp, identifier and payload.';
  const event = raw as Record<string, unknown>;
  for (const key in event)
    if (!eventKeys.has(key))
      return `${key}: not a meter event field (event_name, customer, timestamp, identifier, payload).`;
  const eventName = event.event_name;
  if (typeof eventName !== 'string' || eventName.length === 0 || eventName.length > 100)
    return 'event_name: required, a string of 1 to 100 characters.';
  const customer = event.customer;
  if (typeof customer !== 'string' || customer.length === 0 || customer.length > 64)
    return 'customer: required, the customer id (cus_…).';
  const timestamp = parseEventTimestamp(event.timestamp);
  if (typeof timestamp === 'string') return timestamp;
  let identifier = event.identifier;
  if (identifier === undefined || identifier === null) identifier = newId('meterEvent');
  else if (typeof identifier !== 'string' || identifier.length === 0 || identifier.length > maxIdentifierLength)
    return `identifier: a string of 1 to ${maxIdentifierLength} characters, unique within the account and mode.`;
  const payload = event.payload ?? {};
  if (typeof payload !== 'object' || Array.isArray(payload))
    return 'payload: an object of properties (the value and dimensions).';
  let count = 0;
  for (const key in payload as Record<string, unknown>) {
    if (++count > maxPayloadProperties) return `payload: at most ${maxPayloadProperties} properties.`;
    if (key.length > 100) return 'payload: property names of at most 100 characters.';
    const value = (payload as Record<string, unknown>)[key];
    if (typeof value === 'string') {
      if (value.length > maxPropertyValueLength) return `payload.${key}: at most ${maxPropertyValueLength} characters.`;
    } else if (typeof value !== 'number' || !Number.isFinite(value)) return `payload.${key}: a string or a number.`;
  }
  return {
    eventName,
    customerId: customer,
    timestamp,
    identifier: identifier as string,
    payload: payload as Record<string, unknown>,
  };
}
