import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  envelopeTo: string[];
  parsed: ParsedMail;
}

export interface SmtpCapture {
  url: string;
  messages: CapturedMail[];
  /** Resolves once `count` messages have arrived (or rejects after timeoutMs). */
  waitFor(count: number, timeoutMs?: number): Promise<CapturedMail[]>;
  close(): Promise<void>;
}

/**
 * A real SMTP server in the test process: it speaks SMTP on a loopback port,
 * receives what nodemailer sends, and parses each message with mailparser.
 */
export async function startSmtpCapture(): Promise<SmtpCapture> {
  const messages: CapturedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          messages.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), parsed });
          waiters.splice(0).forEach((wake) => wake());
          callback();
        })
        .catch(callback);
    },
  });
  // A client that dies mid-message (a worker SIGKILLed while it sends, as test/wave-crash does) resets its
  // connection; smtp-server emits that as 'error' on the server, which with no listener is an uncaught exception
  // in the test process. A real mail server logs it and goes on serving: the message was never accepted, and the
  // sender's retry is what the tests check.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} emails, got ${messages.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return messages;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
