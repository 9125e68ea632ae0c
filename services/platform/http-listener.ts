import type http from 'node:http';

/** A small HTTP server a process runs beside its main work (worker health, /metrics): its port and how to stop it. */
export interface RunningListener {
  port: number;
  close(): Promise<void>;
}

/** Listens on `port` (0: any free one) and answers with the bound port; close() ends open connections too, so a keep-alive socket never holds it open. */
export async function listenHttp(server: http.Server, port: number, hostname: string): Promise<RunningListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, hostname, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
