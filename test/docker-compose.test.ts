import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { customSearchAttributes } from '../workflows/search-attributes.ts';

/**
 * No Docker engine runs where the tests run, so the compose file is checked as
 * data: the services users expect, from official images, wired to each other,
 * with health checks and the published ports docs/operations.md names.
 */
describe('docker-compose.yml', () => {
  const compose = parse(fs.readFileSync('docker-compose.yml', 'utf8'), { merge: true });
  const services = compose.services as Record<string, any>;

  it('has every part of the engine', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'exports-worker', 'mailpit', 'postgres', 'temporal', 'temporal-search-attributes', 'temporal-ui', 'worker']);
  });

  it('uses official images with pinned tags, and builds the engine from its Dockerfile', () => {
    const official = /^(postgres|temporalio\/(auto-setup|admin-tools|ui)|axllent\/mailpit):[\w.]+$/;
    for (const name of ['postgres', 'temporal', 'temporal-search-attributes', 'temporal-ui', 'mailpit']) expect(services[name].image).toMatch(official);
    expect(services.api.build).toBe('.');
    expect(services.worker.build).toBe('.');
    expect(fs.readFileSync('Dockerfile', 'utf8')).toMatch(/^FROM node:24/m);
  });

  it('publishes the ports docs/operations.md names', () => {
    const published = (name: string) => (services[name].ports ?? []).map((p: string) => p.split(':')[0]);
    expect(published('api')).toEqual(['3000']);
    expect(published('temporal-ui')).toEqual(['8233']);
    expect(published('mailpit')).toContain('8025');
    expect(published('temporal')).toEqual(['7233']);
  });

  it('gives every long-running service a health check and starts things in order', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.restart === 'no') continue;
      expect(service.healthcheck?.test, `${name} health check`).toBeDefined();
    }
    expect(services.temporal.depends_on.postgres.condition).toBe('service_healthy');
    expect(services.worker.depends_on.temporal.condition).toBe('service_healthy');
    expect(services.worker.depends_on['temporal-search-attributes'].condition).toBe('service_completed_successfully');
  });

  it('points the API and the worker at the database, Temporal and SMTP services', () => {
    for (const name of ['api', 'worker', 'exports-worker']) {
      const env = services[name].environment;
      expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.SMTP_URL).toBe('smtp://mailpit:1025');
    }
    expect(services.api.command).toEqual(['node', 'api/server.ts']);
    expect(services.worker.command).toEqual(['node', 'worker.ts']);
  });

  it('runs exports on their own worker, as `npm run worker:exports` does, with the files shared with the API', () => {
    const scripts = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts as Record<string, string>;
    expect(services['exports-worker'].command.join(' ')).toBe(scripts['worker:exports']);
    expect(services['exports-worker'].build).toBe('.');
    expect(services['exports-worker'].environment.EXPORTS_TASK_QUEUE).toBe('billing-exports');
    expect(services.worker.environment.WORKER_EXPORTS).toBe('false');
    for (const name of ['api', 'worker', 'exports-worker']) expect(services[name].volumes).toContain('export-files:/app/data/exports');
    expect(Object.keys(compose.volumes as object)).toContain('export-files');
  });

  it('registers exactly the search attributes the workflows use', () => {
    const command: string = services['temporal-search-attributes'].command.join(' ');
    const registered = [...command.matchAll(/--name (\w+) --type (\w+)/g)].map(([, name, type]) => `${name}=${type}`);
    expect(registered.sort()).toEqual(customSearchAttributes.map((k) => `${k.name}=${k.type === 'BOOL' ? 'Bool' : 'Keyword'}`).sort());
  });
});
