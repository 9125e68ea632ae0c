import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { collectProcessMetrics, metricsRegistry } from '../services/observability/metrics.ts';

/**
 * The operators' files of docs/observability/ (Prometheus alert rules, the Grafana dashboard) parse, and name only
 * metrics the engine exports; docs/operations.md lists every metric of the registry. Cheap: no engine.
 */
const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** The Temporal SDK's worker metrics the files use (its runtime's Prometheus exporter, `temporal_` prefix; seen in test/metrics). */
const sdkMetrics = new Set([
  'temporal_workflow_task_execution_failed',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_worker_task_slots_available',
  'temporal_local_activity_execution_latency',
  'temporal_activity_execution_latency',
  'temporal_sticky_cache_size',
]);

collectProcessMetrics();
const exported = new Set(metricsRegistry.getMetricsAsArray().map((metric) => metric.name));

/** The metric names an expression reads (a histogram's _bucket/_count/_sum by its own name). */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:billing|temporal|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => {
    const name = m[1]!;
    const base = name.replace(/_(bucket|count|sum)$/, '');
    return exported.has(name) || sdkMetrics.has(name) ? name : base;
  });
}

const known = (name: string) => exported.has(name) || sdkMetrics.has(name);

describe('observability files for operators', () => {
  it('alerts.yml parses as Prometheus rule groups and its expressions name exported metrics', () => {
    const doc = parse(read('docs/observability/alerts.yml')) as {
      groups: {
        name: string;
        rules: {
          alert: string;
          expr: string;
          for: string;
          labels: { severity: string };
          annotations: { summary: string };
        }[];
      }[];
    };
    const rules = doc.groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.alert)).toEqual(
      expect.arrayContaining(['BillingChargeFailureRateHigh', 'BillingOutboxLagHigh', 'TemporalWorkflowTaskFailures']),
    );
    for (const rule of rules) {
      expect(rule.expr, rule.alert).toEqual(expect.any(String));
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical']).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      const names = metricsIn(rule.expr);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(known(name), `${rule.alert} reads ${name}`).toBe(true);
    }
  });

  it('the Grafana dashboard is valid JSON whose panels query exported metrics', () => {
    const dashboard = JSON.parse(read('docs/observability/grafana-dashboard.json')) as {
      uid: string;
      panels: { type: string; title: string; gridPos: object; targets?: { expr: string }[] }[];
    };
    expect(dashboard.uid).toBe('billing-engine');
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.gridPos, panel.title).toBeDefined();
      if (panel.type === 'row') continue;
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!)
        for (const name of metricsIn(target.expr)) {
          expect(known(name), `${panel.title} reads ${name}`).toBe(true);
          queried.add(name);
        }
    }
    // Every metric of the engine's own has a panel.
    for (const name of exported)
      if (name.startsWith('billing_')) expect(queried.has(name), `no panel shows ${name}`).toBe(true);
  });

  it('docs/operations.md lists every billing_ metric', () => {
    const doc = read('docs/operations.md');
    for (const name of exported) if (name.startsWith('billing_')) expect(doc, name).toContain(`\`${name}\``);
  });
});
