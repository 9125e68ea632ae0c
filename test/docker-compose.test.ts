import fs from 'node:fs';

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { customSearchAttributes } from '../workflows/search-attributes.ts';
import { loadCompose, readDotenv } from './helpers/compose.ts';

/**
 * No Docker engine runs where the tests run, so the compose file is checked as
 * data: the services users expect, from official images, wired to each other,
 * with restart policies, health checks and the published ports docs/operations.md
 * names, read as Compose reads it with .env.example's values and the required ones
 * filled in (test/helpers/compose.ts). test/compose-native.test.ts runs the engine
 * services from it.
 */
describe('docker-compose.yml', () => {
  const raw = parse(fs.readFileSync('docker-compose.yml', 'utf8'), { merge: true });
  const envExample = readDotenv(fs.readFileSync('.env.example', 'utf8'));
  const filled = {
    ...envExample,
    POSTGRES_PASSWORD: 'Pg0secret',
    AUTH_SECRET: 's'.repeat(40),
    ADMIN_EMAIL: 'ops@example.com',
    ADMIN_PASSWORD: 'Ops!23456',
    LIVE_PROCESSOR: 'stripe',
  };
  const compose = loadCompose(filled).value;
  const services = compose.services as Record<string, any>;

  it('has every part of the engine', () => {
    expect(Object.keys(services).sort()).toEqual([
      'api',
      'exports-worker',
      'mailpit',
      'postgres',
      'temporal',
      'temporal-search-attributes',
      'temporal-ui',
      'worker',
    ]);
  });

  it('uses official images with pinned tags, and builds the engine from its Dockerfile', () => {
    const official = /^(postgres|temporalio\/(auto-setup|admin-tools|ui)|axllent\/mailpit):[\w.]+$/;
    for (const name of ['postgres', 'temporal', 'temporal-search-attributes', 'temporal-ui', 'mailpit'])
      expect(services[name].image).toMatch(official);
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

  it('gives every service a restart policy, every long-running one a health check, and starts things in order', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.restart, `${name} restart policy`).toMatch(/^(no|always|on-failure(:\d+)?|unless-stopped)$/);
      // Only the one-shot (it exits when done) is not restarted.
      if (service.restart === 'no') {
        expect(name).toBe('temporal-search-attributes');
        continue;
      }
      expect(service.restart, name).toBe('unless-stopped');
      expect(service.healthcheck?.test, `${name} health check`).toBeDefined();
    }
    expect(services.temporal.depends_on.postgres.condition).toBe('service_healthy');
    expect(services.worker.depends_on.temporal.condition).toBe('service_healthy');
    expect(services.worker.depends_on['temporal-search-attributes'].condition).toBe('service_completed_successfully');
    // The worker migrates the database: the API and the exports worker wait until it is healthy.
    expect(services.api.depends_on.worker.condition).toBe('service_healthy');
    expect(services['exports-worker'].depends_on.worker.condition).toBe('service_healthy');
  });

  it("the engine services' health checks ask the process itself: the API's /health, the workers' WORKER_HEALTH_PORT", () => {
    const fetches = (name: string) => services[name].healthcheck.test.join(' ');
    expect(fetches('api')).toContain("fetch('http://127.0.0.1:' + process.env.PORT + '/health')");
    for (const name of ['worker', 'exports-worker']) {
      expect(services[name].environment.WORKER_HEALTH_PORT).toMatch(/^\d+$/);
      expect(fetches(name)).toContain("fetch('http://127.0.0.1:' + process.env.WORKER_HEALTH_PORT + '/health')");
      // The worker bundles its workflows before it polls: a start period covers that.
      expect(services[name].healthcheck.start_period).toBeDefined();
    }
  });

  it('keeps the database password and the secrets out of the file: each comes from .env, and a missing one names .env', () => {
    const reference = (name: string) => new RegExp(`^\\$\\{${name}:\\?[^}]*\\.env[^}]*\\}$`);
    expect(raw.services.postgres.environment.POSTGRES_PASSWORD).toMatch(reference('POSTGRES_PASSWORD'));
    expect(raw.services.temporal.environment.POSTGRES_PWD).toMatch(reference('POSTGRES_PASSWORD'));
    for (const name of ['api', 'worker', 'exports-worker']) {
      const env = raw.services[name].environment;
      expect(env.DATABASE_URL).toMatch(/^postgres:\/\/billing:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/billing$/);
      for (const secret of ['AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD', 'LIVE_PROCESSOR'])
        expect(env[secret], `${name} ${secret}`).toMatch(reference(secret));
      // Interpolated: the values of .env.
      expect(services[name].environment).toMatchObject({
        DATABASE_URL: 'postgres://billing:Pg0secret@postgres:5432/billing',
        AUTH_SECRET: filled.AUTH_SECRET,
        ADMIN_EMAIL: filled.ADMIN_EMAIL,
        LIVE_PROCESSOR: 'stripe',
        NODE_ENV: 'production',
      });
    }
    expect(services.postgres.environment.POSTGRES_PASSWORD).toBe('Pg0secret');
    // .env.example ships no secret, and .env (the filled copy) reaches neither git nor the image.
    for (const secret of ['POSTGRES_PASSWORD', 'AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD', 'LIVE_PROCESSOR'])
      expect(envExample[secret], secret).toBe('');
    expect(fs.readFileSync('.gitignore', 'utf8').split('\n')).toContain('.env');
    expect(fs.readFileSync('.dockerignore', 'utf8').split('\n')).toContain('.env');
  });

  it('points the API and the worker at the database, Temporal and SMTP services', () => {
    for (const name of ['api', 'worker', 'exports-worker']) {
      const env = services[name].environment;
      expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.SMTP_URL).toBe('smtp://mailpit:1025');
    }
    // The API and the worker run as `npm run api` and `npm run worker` do (their V8 flags included: docs/usage.md#measured,
    // docs/scaling.md#memory-the-workflow-cache).
    const scripts = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts;
    expect(services.api.command.join(' ')).toBe(scripts.api);
    expect(services.api.command.at(-1)).toBe('api/server.ts');
    expect(services.worker.command.join(' ')).toBe(scripts.worker);
    expect(services.worker.command.at(-1)).toBe('worker.ts');
  });

  it('runs exports on their own worker, as `npm run worker:exports` does, with the files shared with the API', () => {
    const scripts = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts as Record<
      string,
      string
    >;
    expect(services['exports-worker'].command.join(' ')).toBe(scripts['worker:exports']);
    expect(services['exports-worker'].build).toBe('.');
    expect(services['exports-worker'].environment.EXPORTS_TASK_QUEUE).toBe('billing-exports');
    expect(services.worker.environment.WORKER_EXPORTS).toBe('false');
    for (const name of ['api', 'worker', 'exports-worker'])
      expect(services[name].volumes).toContain('export-files:/app/data/exports');
    expect(Object.keys(compose.volumes as object)).toContain('export-files');
  });

  it('registers exactly the search attributes the workflows use', () => {
    const command: string = services['temporal-search-attributes'].command.join(' ');
    const registered = [...command.matchAll(/--name (\w+) --type (\w+)/g)].map(([, name, type]) => `${name}=${type}`);
    expect(registered.sort()).toEqual(
      customSearchAttributes.map((k) => `${k.name}=${k.type === 'BOOL' ? 'Bool' : 'Keyword'}`).sort(),
    );
  });
});
