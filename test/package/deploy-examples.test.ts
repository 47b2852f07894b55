/**
 * The deployment recipes in examples/deploy/ keep the two things docs/deployment.md says they get
 * right: the supervisor's signal reaches `resil run` itself (no npm, no shell in between), and
 * the supervisor waits longer than the runner's graceful stop.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDefaults } from '../../src/scheduler/job-defaults.ts';
import { repoRoot } from '../cli/run-process.ts';

const read = (file: string) => readFileSync(join(repoRoot, 'examples/deploy', file), 'utf8');
/** shutdownGrace plus the 5 s resil run gives jobs that ignore their aborted signal, in seconds. */
const stopSeconds = configDefaults.shutdownGrace / 1000 + 5;
const runsResilDirectly = (command: readonly string[]) =>
  command[0] === 'node' &&
  command[1]?.endsWith('resil/bin/resil.js') &&
  !command.some((part) => /npm|npx/.test(part));

describe('examples/deploy', () => {
  it('Dockerfile: resil in exec form as the entrypoint, run with metrics', () => {
    const dockerfile = read('Dockerfile');
    const instruction = (name: string) => {
      const line = dockerfile.split('\n').find((candidate) => candidate.startsWith(`${name} `));
      return JSON.parse(line!.slice(name.length + 1)) as string[];
    };
    expect(runsResilDirectly(instruction('ENTRYPOINT'))).toBe(true);
    expect(instruction('CMD')).toEqual(['run', '--metrics', '0.0.0.0:9464']);
    expect(dockerfile).toMatch(/^STOPSIGNAL SIGTERM$/m);
    expect(dockerfile).toContain(`docker stop --time 45`);
    expect(45).toBeGreaterThan(stopSeconds);
  });

  it('systemd unit: ExecStart is node and resil, SIGTERM first, a stop timeout above the graceful stop', () => {
    const unit = Object.fromEntries(
      read('resil.service')
        .split('\n')
        .filter((line) => /^[A-Za-z]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    const [node = '', script = '', ...args] = (unit.ExecStart ?? '').split(' ');
    expect(runsResilDirectly([node.split('/').at(-1) ?? '', script])).toBe(true);
    expect(args[0]).toBe('run');
    expect(unit).toMatchObject({ KillSignal: 'SIGTERM', KillMode: 'mixed' });
    expect(Number(unit.TimeoutStopSec)).toBeGreaterThan(stopSeconds);
  });

  it('Kubernetes Deployment: resil as the command, grace above the graceful stop, probes on /livez and /readyz', () => {
    const manifest = read('kubernetes.yaml');
    /** A `key: [...]` flow sequence of double-quoted strings (JSON as it is). */
    const list = (key: string) =>
      JSON.parse(manifest.match(new RegExp(`^ +${key}: (\\[.*\\])$`, 'm'))![1]!) as string[];
    expect(manifest).toMatch(/^kind: Deployment$/m);
    expect(Number(manifest.match(/terminationGracePeriodSeconds: (\d+)/)![1])).toBeGreaterThan(stopSeconds);
    expect(runsResilDirectly(list('command'))).toBe(true);
    expect(list('args')).toEqual(['run', '--metrics', '0.0.0.0:9464']);
    expect(manifest).toMatch(/livenessProbe:\n +httpGet:\n +path: \/livez\n +port: metrics\n/);
    expect(manifest).toMatch(/readinessProbe:\n +httpGet:\n +path: \/readyz\n +port: metrics\n/);
    expect(manifest).toMatch(/- name: metrics\n +containerPort: 9464\n/);
    expect(manifest).toMatch(/secretKeyRef:/);
    expect(manifest).not.toMatch(/redis:\/\//);
  });
});
