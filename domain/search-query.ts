/**
 * The search language of transactions, invoices and customers (docs/exports-and-search.md), pure: a tokenizer and
 * a parser from the query string to a typed AST. Every value is checked here (known
 * field, operator the field takes, enum values, integers, dates), so a bad query fails
 * with the 1-based character position and what was expected, before any SQL exists.
 *
 *   query   := clause ( (AND | OR)? clause )*      -- a space is AND; AND and OR never mixed
 *   clause  := '-'? field op value
 *   field   := name | 'metadata' '[' string ']'
 *   op      := ':' | '>' | '<' | '>=' | '<=' | '~'
 *   value   := string | bare                        -- string: "…" with \" and \\ escapes
 */

/**
 * One searchable field: what its values are and which operators it takes.
 * `id`/`text`: strings (`~` too when `substring`); `enum`: one of `values`;
 * `amount`: an integer in minor units; `time`: a date, ISO time or unix seconds;
 * `currency`: a three-letter code (any case). `amount` and `time` compare (`>`, `<`, `>=`, `<=`);
 * `nullable` fields also take a bare `null` (the field is unset).
 */
export type SearchFieldSpec = {
  type: 'id' | 'text' | 'enum' | 'amount' | 'time' | 'currency';
  values?: readonly string[];
  substring?: boolean;
  nullable?: boolean;
};

/** A resource's field table: the same language, its own fields (docs/exports-and-search.md). */
export type SearchSchema = {
  resource: string;
  fields: Readonly<Record<string, SearchFieldSpec>>;
  /** Whether `metadata["key"]:"value"` is a field of this resource. */
  metadata: boolean;
};

export const transactionSearchSchema: SearchSchema = {
  resource: 'transactions',
  metadata: true,
  fields: {
    id: { type: 'id' },
    status: { type: 'enum', values: ['pending', 'succeeded', 'failed', 'canceled'] },
    type: { type: 'enum', values: ['payment', 'credit', 'refund'] },
    amount: { type: 'amount' },
    currency: { type: 'currency' },
    reference: { type: 'text', substring: true, nullable: true },
    customer: { type: 'id', nullable: true },
    invoice: { type: 'id', nullable: true },
    subscription: { type: 'id', nullable: true },
    created: { type: 'time' },
    risk_level: { type: 'enum', values: ['low', 'medium', 'high'] },
    email: { type: 'text', substring: true, nullable: true },
  },
};

export const invoiceSearchSchema: SearchSchema = {
  resource: 'invoices',
  metadata: false,
  fields: {
    id: { type: 'id' },
    number: { type: 'text', substring: true },
    status: { type: 'enum', values: ['open', 'paid', 'void', 'uncollectible'] },
    customer: { type: 'id' },
    email: { type: 'text', substring: true, nullable: true },
    subscription: { type: 'id', nullable: true },
    total: { type: 'amount' },
    amount_due: { type: 'amount' },
    discount: { type: 'amount' },
    tax: { type: 'amount' },
    amount_paid: { type: 'amount' },
    currency: { type: 'currency' },
    created: { type: 'time' },
    period_start: { type: 'time' },
    period_end: { type: 'time' },
    paid_at: { type: 'time', nullable: true },
    // An invoice with a line of this plan, or of this quantity (compare with > < >= <=): pricing phase 1.
    plan: { type: 'id' },
    quantity: { type: 'amount' },
  },
};

export const customerSearchSchema: SearchSchema = {
  resource: 'customers',
  metadata: false,
  fields: {
    id: { type: 'id' },
    email: { type: 'text', substring: true },
    name: { type: 'text', substring: true, nullable: true },
    // The merchant's own id for the customer (exact: external_id:"user_4821").
    external_id: { type: 'text', nullable: true },
    created: { type: 'time' },
    // The address's ISO country (upper case: country:DE) and none, exempt or reverse (docs/discounts-and-taxes.md#taxes).
    country: { type: 'text', nullable: true },
    tax_exempt: { type: 'enum', values: ['none', 'exempt', 'reverse'] },
  },
};

/** Credit notes (docs/discounts-and-taxes.md#credit-notes): found as invoices are, by number, customer, invoice, amounts. */
export const creditNoteSearchSchema: SearchSchema = {
  resource: 'credit_notes',
  metadata: false,
  fields: {
    id: { type: 'id' },
    number: { type: 'text', substring: true },
    status: { type: 'enum', values: ['issued', 'void'] },
    invoice: { type: 'id' },
    customer: { type: 'id' },
    // The customer's email now (a credit note keeps none of its own); `~` too.
    email: { type: 'text', substring: true },
    reason: {
      type: 'enum',
      values: ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'],
      nullable: true,
    },
    memo: { type: 'text', substring: true, nullable: true },
    total: { type: 'amount' },
    refund_amount: { type: 'amount' },
    credit_amount: { type: 'amount' },
    out_of_band_amount: { type: 'amount' },
    currency: { type: 'currency' },
    created: { type: 'time' },
    voided_at: { type: 'time', nullable: true },
  },
};

/** The transactions' field names (the first search; kept for callers that list them). */
export const searchFields = Object.keys(transactionSearchSchema.fields) as readonly string[];
export type SearchField = string;
export type SearchOp = ':' | '>' | '<' | '>=' | '<=' | '~';

export const maxClauses = 20;
export const maxQueryLength = 2000;

/** A clause's value, typed by its field. */
export type SearchValue =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  /** An instant or a span: a date is its UTC day, unix seconds or an ISO time without ms its second; `[start, end)` in ms. */
  | { kind: 'time'; start: number; end: number }
  | { kind: 'null' };

export type SearchClause = {
  negated: boolean;
  /** A field of the schema's table, or `metadata`. */
  field: string;
  /** For metadata: the key. */
  key?: string;
  op: SearchOp;
  value: SearchValue;
  position: number;
};

export type SearchQuery = { combinator: 'and' | 'or'; clauses: SearchClause[] };

/** A query that does not parse: `position` is 1-based, `expected` what would have been accepted there. */
export class SearchQueryError extends Error {
  readonly position: number;
  readonly expected: string;
  constructor(position: number, expected: string, found?: string) {
    super(
      `Invalid search query at character ${position}: expected ${expected}${found === undefined ? '' : `, found ${found}`}.`,
    );
    this.name = 'SearchQueryError';
    this.position = position;
    this.expected = expected;
  }
}

type Token =
  | { type: 'word'; text: string; pos: number }
  | { type: 'string'; text: string; pos: number }
  | { type: 'op'; text: SearchOp; pos: number }
  | { type: 'punct'; text: '-' | '[' | ']'; pos: number }
  | { type: 'end'; pos: number };

/** Characters of a bare word (a field name, AND/OR, or an unquoted value such as 2026-11-01T10:00:00Z). */
const wordChar = /[A-Za-z0-9_.@+]/;

/**
 * Splits the query into tokens. Context matters in one place only: after an operator,
 * a bare value runs to the next space (so ISO times keep their colons and dashes).
 */
export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let afterOp = false;
  while (i < input.length) {
    const ch = input[i]!;
    const pos = i + 1;
    if (/\s/.test(ch)) {
      i++;
      afterOp = false;
      continue;
    }
    if (ch === '"') {
      let text = '';
      i++;
      for (;;) {
        if (i >= input.length) throw new SearchQueryError(input.length + 1, 'a closing "', 'the end of the query');
        const c = input[i]!;
        if (c === '\\') {
          const next = input[i + 1];
          if (next !== '"' && next !== '\\')
            throw new SearchQueryError(
              i + 1,
              '\\" or \\\\ after a backslash',
              next === undefined ? 'the end of the query' : JSON.stringify(next),
            );
          text += next;
          i += 2;
          continue;
        }
        if (c === '"') {
          i++;
          break;
        }
        text += c;
        i++;
      }
      tokens.push({ type: 'string', text, pos });
      afterOp = false;
      continue;
    }
    if (afterOp) {
      let end = i;
      while (end < input.length && !/[\s"]/.test(input[end]!)) end++;
      tokens.push({ type: 'word', text: input.slice(i, end), pos });
      i = end;
      afterOp = false;
      continue;
    }
    if (ch === '>' || ch === '<') {
      const op = (input[i + 1] === '=' ? `${ch}=` : ch) as SearchOp;
      tokens.push({ type: 'op', text: op, pos });
      i += op.length;
      afterOp = true;
      continue;
    }
    if (ch === ':' || ch === '~') {
      tokens.push({ type: 'op', text: ch, pos });
      i++;
      afterOp = true;
      continue;
    }
    if (ch === '-' || ch === '[' || ch === ']') {
      tokens.push({ type: 'punct', text: ch, pos });
      i++;
      continue;
    }
    if (wordChar.test(ch)) {
      let end = i;
      while (end < input.length && wordChar.test(input[end]!)) end++;
      tokens.push({ type: 'word', text: input.slice(i, end), pos });
      i = end;
      continue;
    }
    throw new SearchQueryError(pos, 'a field, an operator or a value', JSON.stringify(ch));
  }
  tokens.push({ type: 'end', pos: input.length + 1 });
  return tokens;
}

function describe(token: Token): string {
  if (token.type === 'end') return 'the end of the query';
  if (token.type === 'string') return `"${token.text}"`;
  return JSON.stringify(token.text);
}

/** Parses a query into its AST, or throws SearchQueryError. Never throws anything else. */
export function parseSearchQuery(input: string, schema: SearchSchema = transactionSearchSchema): SearchQuery {
  const fieldNames = [...Object.keys(schema.fields), ...(schema.metadata ? ['metadata["key"]'] : [])].join(', ');
  if (input.length > maxQueryLength)
    throw new SearchQueryError(maxQueryLength + 1, `a query of at most ${maxQueryLength} characters`);
  const tokens = tokenize(input);
  let at = 0;
  const peek = () => tokens[at]!;
  const next = () => tokens[at++]!;

  const clauses: SearchClause[] = [];
  let combinator: 'and' | 'or' | undefined;
  if (peek().type === 'end') throw new SearchQueryError(1, 'a clause such as status:succeeded', 'an empty query');
  for (;;) {
    clauses.push(parseClause());
    const token = peek();
    if (token.type === 'end') break;
    let joiner: 'and' | 'or' = 'and';
    if (token.type === 'word' && /^(and|or)$/i.test(token.text)) {
      joiner = token.text.toLowerCase() as 'and' | 'or';
      next();
      if (peek().type === 'end')
        throw new SearchQueryError(peek().pos, `a clause after ${token.text}`, 'the end of the query');
    }
    if (combinator && combinator !== joiner) {
      throw new SearchQueryError(
        token.pos,
        `${combinator.toUpperCase()} (AND and OR cannot be mixed in one query)`,
        joiner.toUpperCase(),
      );
    }
    combinator = joiner;
    if (clauses.length >= maxClauses) throw new SearchQueryError(peek().pos, `at most ${maxClauses} clauses`);
  }
  return { combinator: combinator ?? 'and', clauses };

  function parseClause(): SearchClause {
    let token = next();
    const position = token.pos;
    let negated = false;
    if (token.type === 'punct' && token.text === '-') {
      negated = true;
      token = next();
    }
    if (token.type !== 'word' || !/^[a-z_]+$/.test(token.text))
      throw new SearchQueryError(token.pos, `a field (${fieldNames})`, describe(token));
    let key: string | undefined;
    const field = token.text;
    const spec = Object.hasOwn(schema.fields, field) ? schema.fields[field] : undefined;
    if (field === 'metadata' && schema.metadata) {
      const open = next();
      if (open.type !== 'punct' || open.text !== '[')
        throw new SearchQueryError(open.pos, '[ after metadata', describe(open));
      const name = next();
      if (name.type !== 'string' || name.text === '')
        throw new SearchQueryError(name.pos, 'a quoted metadata key', describe(name));
      key = name.text;
      const close = next();
      if (close.type !== 'punct' || close.text !== ']') throw new SearchQueryError(close.pos, ']', describe(close));
    } else if (!spec) {
      throw new SearchQueryError(token.pos, `a field (${fieldNames})`, describe(token));
    }
    const opToken = next();
    if (opToken.type !== 'op')
      throw new SearchQueryError(opToken.pos, 'an operator (:, >, <, >=, <=, ~)', describe(opToken));
    const op = opToken.text;
    const allowed: SearchOp[] = !spec
      ? [':']
      : spec.type === 'amount' || spec.type === 'time'
        ? [':', '>', '<', '>=', '<=']
        : spec.substring
          ? [':', '~']
          : [':'];
    if (!allowed.includes(op))
      throw new SearchQueryError(opToken.pos, `${allowed.join(' or ')} after ${field}`, JSON.stringify(op));
    const valueToken = next();
    if (valueToken.type !== 'word' && valueToken.type !== 'string')
      throw new SearchQueryError(valueToken.pos, `a value for ${field}`, describe(valueToken));
    const value = typedValue(field, spec, op, valueToken);
    return { negated, field, ...(key === undefined ? {} : { key }), op, value, position };
  }
}

function typedValue(
  field: string,
  spec: SearchFieldSpec | undefined,
  op: SearchOp,
  token: { type: 'word' | 'string'; text: string; pos: number },
): SearchValue {
  const { text, pos } = token;
  if (token.type === 'word' && text === 'null' && op === ':' && spec?.nullable) return { kind: 'null' };
  if (spec?.type === 'amount') {
    if (!/^-?\d{1,15}$/.test(text))
      throw new SearchQueryError(pos, `an integer ${field} in minor units`, JSON.stringify(text));
    return { kind: 'number', value: Number(text) };
  }
  if (spec?.type === 'time') {
    const span = timeSpan(text);
    if (!span)
      throw new SearchQueryError(
        pos,
        'a date (2026-11-01), an ISO time (2026-11-01T10:00:00Z) or unix seconds',
        JSON.stringify(text),
      );
    return { kind: 'time', ...span };
  }
  if (spec?.type === 'enum' && !spec.values!.includes(text))
    throw new SearchQueryError(pos, `one of ${spec.values!.join(', ')}`, JSON.stringify(text));
  if (spec?.type === 'currency') {
    if (!/^[A-Za-z]{3}$/.test(text))
      throw new SearchQueryError(pos, 'a three-letter currency code', JSON.stringify(text));
    return { kind: 'string', value: text.toUpperCase() };
  }
  if (op === '~' && text.length === 0) throw new SearchQueryError(pos, 'some text to look for after ~', '""');
  return { kind: 'string', value: text };
}

/** A date is its UTC day; unix seconds and an ISO time without milliseconds their second; with milliseconds, that millisecond. */
export function timeSpan(text: string): { start: number; end: number } | undefined {
  if (/^\d{1,11}$/.test(text)) {
    const start = Number(text) * 1000;
    return { start, end: start + 1000 };
  }
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (date) {
    const start = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]));
    if (Number.isNaN(start) || new Date(start).toISOString().slice(0, 10) !== text) return undefined;
    return { start, end: start + 86_400_000 };
  }
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!time) return undefined;
  const start = Date.parse(text);
  if (Number.isNaN(start)) return undefined;
  return { start, end: start + (time[1] ? 1 : 1000) };
}
