/**
 * The last requests this API process served, per account and mode, for
 * GET /v1/logs/stream (`billing logs tail`). In memory and bounded: a process
 * shows its own requests only (docs/cli.md).
 */
export interface RequestLogLine {
  id: number;
  request_id: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  source: 'cli' | 'api_key' | 'session' | 'anonymous';
  created_at: string;
}

type Listener = (line: RequestLogLine) => void;

export class RequestLogBuffer {
  private readonly lines = new Map<string, RequestLogLine[]>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private next = 1;
  private readonly perKey: number;
  constructor(perKey = 200) {
    this.perKey = perKey;
  }

  private key(accountId: string, livemode: boolean) {
    return `${accountId}|${livemode ? 'live' : 'test'}`;
  }

  record(accountId: string, livemode: boolean, line: Omit<RequestLogLine, 'id'>): void {
    const key = this.key(accountId, livemode);
    const full = { id: this.next++, ...line };
    let list = this.lines.get(key);
    if (!list) this.lines.set(key, (list = []));
    list.push(full);
    if (list.length > this.perKey) list.splice(0, list.length - this.perKey);
    for (const listener of this.listeners.get(key) ?? []) listener(full);
  }

  recent(accountId: string, livemode: boolean): RequestLogLine[] {
    return [...(this.lines.get(this.key(accountId, livemode)) ?? [])];
  }

  subscribe(accountId: string, livemode: boolean, listener: Listener): () => void {
    const key = this.key(accountId, livemode);
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
    };
  }
}
