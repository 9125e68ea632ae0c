import type { EntityManager } from '@mikro-orm/postgresql';
import { SandboxProcessor } from '../../services/processors/sandbox.ts';
import type { PaymentProcessor } from '../../services/processors/types.ts';

/**
 * The sandbox processor with a gate in front of its charges, for race tests: `hold()` makes the next
 * charge wait at the processor (its `inCharge` resolves when one arrives) until `open()` lets it, and
 * every later one, through. Everything else is the sandbox's.
 */
export function gatedSandboxProcessor(em: () => EntityManager) {
  const sandbox = new SandboxProcessor(em);
  let gate: { entered: () => void; release: Promise<void> } | null = null;
  const processor: PaymentProcessor = Object.assign(Object.create(sandbox) as PaymentProcessor, {
    async charge(request: Parameters<PaymentProcessor['charge']>[0]) {
      if (gate) {
        gate.entered();
        await gate.release;
      }
      return sandbox.charge(request);
    },
  });
  function hold(): { inCharge: Promise<void>; open: () => void } {
    let entered!: () => void;
    const inCharge = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    gate = { entered, release: new Promise<void>((resolve) => (release = resolve)) };
    return {
      inCharge,
      open: () => {
        gate = null;
        release();
      },
    };
  }
  return { processor, hold };
}
