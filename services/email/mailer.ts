import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import type * as Nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';

/** nodemailer, loaded when the first mailer is built rather than with this module (a process that builds none: an exports worker). */
let nodemailerModule: typeof Nodemailer | undefined;
const nodemailer = () => (nodemailerModule ??= createRequire(import.meta.url)('nodemailer') as typeof Nodemailer);

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** Stable per message (event id + template): a resend of the same message carries the same Message-ID. */
  messageId?: string;
  /** The From display name (the merchant's account name): MAIL_FROM's address with this name. Unset: MAIL_FROM as configured. */
  fromName?: string;
}

/** The From header: MAIL_FROM's address under `name` (e.g. `"Acme" <billing@localhost>`), or MAIL_FROM itself. */
export function fromHeader(mailFrom: string, name?: string): string | { name: string; address: string } {
  if (!name) return mailFrom;
  const address = mailFrom.match(/<([^<>]+)>\s*$/)?.[1] ?? mailFrom.trim();
  // One line: a name with CR/LF or control characters cannot add a header.
  return { name: name.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim(), address };
}

/** What nodemailer sends for a mail, from MAIL_FROM (`from`) under the mail's own From name when it has one. */
function messageOf(mail: OutgoingMail, from: string): Nodemailer.SendMailOptions {
  return {
    from: fromHeader(from, mail.fromName),
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: mail.messageId,
  };
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<{ messageId: string }>;
  close(): void;
}

/**
 * How long each step of an SMTP session may wait (connecting, the greeting, then any silence): a server that hangs
 * fails the send in seconds, not nodemailer's default 2 minutes to connect and 10 of silence. A send holds a
 * database connection and its claim (services/email/send-once.ts), which PostgreSQL frees after `silentOwnerMs` of
 * it. Query parameters of SMTP_URL (`?socketTimeout=60000`) override them.
 */
export const smtpTimeouts = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };

/** nodemailer over SMTP_URL (smtp://user:pass@host:port, or smtps://...). */
export function createSmtpMailer(smtpUrl: string, from: string): Mailer {
  const transport: Transporter = nodemailer().createTransport({ url: smtpUrl, ...smtpTimeouts });
  return fromTransport(transport, from);
}

/**
 * Development without SMTP_URL: nodemailer builds the real message and it is
 * written to `dir` as an .eml file (open it in any mail client, or read it as
 * text). Nothing leaves the machine.
 */
export function createFileMailer(dir: string, from: string): Mailer {
  // The folder is made at the first email, not here: a process that sends none (the API, an exports worker) writes nothing.
  let made = false;
  const transport: Transporter = nodemailer().createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(mail) {
      const info = await transport.sendMail(messageOf(mail, from));
      if (!made) fs.mkdirSync(dir, { recursive: true });
      made = true;
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${info.messageId.replace(/[^a-zA-Z0-9._-]/g, '')}.eml`;
      fs.writeFileSync(path.join(dir, name), info.message as Buffer);
      return { messageId: info.messageId };
    },
    close: () => transport.close(),
  };
}

function fromTransport(transport: Transporter, from: string): Mailer {
  return {
    async send(mail) {
      const info = await transport.sendMail(messageOf(mail, from));
      return { messageId: info.messageId };
    },
    close: () => transport.close(),
  };
}

/** SMTP when SMTP_URL is set, else .eml files under DATA_DIR/mail. */
export function createMailer(config: { smtpUrl: string | undefined; mailFrom: string; dataDir: string }): Mailer {
  return config.smtpUrl
    ? createSmtpMailer(config.smtpUrl, config.mailFrom)
    : createFileMailer(path.join(config.dataDir, 'mail'), config.mailFrom);
}
