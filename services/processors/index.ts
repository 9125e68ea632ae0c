/**
 * The processor of each mode, picked by configuration (LIVE_PROCESSOR,
 * SANDBOX_PROCESSOR; docs/processors.md) and built once per process: the worker
 * (activities) and the API each hold one `Processors`. Every charge, settlement
 * and refund goes through `forMode(row.livemode)`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import type { ProcessorsConfig } from '../../config.ts';
import { SandboxProcessor } from './sandbox.ts';
import { StripeProcessor } from './stripe.ts';
import type { PaymentProcessor } from './types.ts';

export interface Processors {
  forMode(livemode: boolean): PaymentProcessor;
  /**
   * Whether a row of this mode moves no real money: test mode always, and live mode
   * when it runs on the sandbox processor (a demo). Pages, emails and PDFs say TEST.
   */
  isTestMode(livemode: boolean): boolean;
}

/** Per-mode overrides (tests inject a processor; one given as `both` serves both modes). */
export interface ProcessorOverrides {
  live?: PaymentProcessor;
  test?: PaymentProcessor;
  both?: PaymentProcessor;
}

export function createProcessors(
  config: ProcessorsConfig,
  em: () => EntityManager,
  overrides: ProcessorOverrides = {},
): Processors {
  let sandbox: SandboxProcessor | undefined;
  const build = (livemode: boolean): PaymentProcessor => {
    const name = livemode ? config.live : config.test;
    if (name === 'sandbox') return (sandbox ??= new SandboxProcessor(em));
    const keys = livemode ? config.stripe.live : config.stripe.test;
    if (!keys) throw new Error(`${livemode ? 'LIVE' : 'SANDBOX'}_PROCESSOR=stripe without Stripe keys for that mode.`);
    return new StripeProcessor({
      secretKey: keys.secretKey,
      webhookSecret: keys.webhookSecret,
      apiBase: config.stripe.apiBase,
    });
  };
  const live = overrides.live ?? overrides.both ?? build(true);
  const test = overrides.test ?? overrides.both ?? build(false);
  return {
    forMode: (livemode) => (livemode ? live : test),
    isTestMode: (livemode) => !livemode || live.name === 'sandbox',
  };
}

/** The development default: the sandbox for both modes. */
export const sandboxOnlyConfig: ProcessorsConfig = {
  live: 'sandbox',
  test: 'sandbox',
  stripe: { live: null, test: null, apiBase: undefined },
  allowSandboxLive: true,
};

/** The sandbox for both modes (the development default), on this database. */
export function sandboxProcessors(em: () => EntityManager): Processors {
  return createProcessors(sandboxOnlyConfig, em);
}
