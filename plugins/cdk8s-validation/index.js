'use strict';
// cdk8s-cli validation plugin for dra-guard.
//
// cdk8s synth loads this module from the path in cdk8s.yaml (`validations:`), calls
// validate(context) with the synthesized manifest paths, and fails the synth (exit 2)
// when the report is submitted as 'failure'.  The rules live in Python; this file only
// runs `dra-guard check --format json` and translates its findings into the plugin API.
// No network, no install: the executable comes from the project's environment.

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const SEVERITIES = ['low', 'medium', 'high', 'critical'];

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch (error) {
    return false;
  }
}

// The dra-guard of this project: explicit property, then $DRA_GUARD, then the
// project's virtualenv (.venv, then $VIRTUAL_ENV), then PATH.
function findExecutable(properties, cwd) {
  const candidates = [];
  if (properties.executable) candidates.push(path.resolve(cwd, properties.executable));
  if (process.env.DRA_GUARD) candidates.push(path.resolve(cwd, process.env.DRA_GUARD));
  candidates.push(path.join(cwd, '.venv', 'bin', 'dra-guard'));
  if (process.env.VIRTUAL_ENV) candidates.push(path.join(process.env.VIRTUAL_ENV, 'bin', 'dra-guard'));
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir) candidates.push(path.join(dir, 'dra-guard'));
  }
  return { found: candidates.find(isExecutable), tried: candidates };
}

class DraGuardValidation {
  constructor(properties) {
    this.properties = properties || {};
    const failOn = this.properties.failOn || 'medium';
    if (!SEVERITIES.includes(failOn)) {
      throw new Error(`dra-guard plugin: failOn must be one of ${SEVERITIES.join(', ')}, not '${failOn}'`);
    }
    this.failOn = failOn;
  }

  async validate(context) {
    const cwd = process.cwd();
    const { found, tried } = findExecutable(this.properties, cwd);
    if (!found) {
      context.logger.log(`dra-guard executable not found; tried:\n  ${tried.join('\n  ')}\n` +
        'Run `make demo` (it creates .venv), or set the plugin property `executable` or $DRA_GUARD.');
      context.report.submit('failure');
      return;
    }
    const args = ['check', '--format', 'json', '--fail-on', this.failOn];
    if (this.properties.config) args.push('--config', path.resolve(cwd, this.properties.config));
    args.push(...context.manifests);
    const result = spawnSync(found, args, { cwd, encoding: 'utf-8', maxBuffer: 256 * 1024 * 1024 });
    let report;
    try {
      report = JSON.parse(result.stdout);
    } catch (error) {
      context.logger.log(`dra-guard (${found}) did not produce a report (exit ${result.status}):\n` +
        `${result.stderr || result.error || ''}`);
      context.report.submit('failure');
      return;
    }
    const threshold = SEVERITIES.indexOf(this.failOn);
    for (const finding of report.findings) {
      if (SEVERITIES.indexOf(finding.severity) < threshold) continue;
      context.report.addViolation({
        ruleName: finding.rule,
        recommendation: `[${finding.severity}] ${finding.object.kind}/${finding.object.namespace || '-'}/` +
          `${finding.object.name}: ${finding.message}`,
        fix: finding.remediation,
        violatingResources: [{
          resourceName: finding.object.name,
          locations: [`${finding.path} (line ${finding.line})`],
          manifestPath: finding.file,
        }],
      });
    }
    for (const error of report.errors) {
      context.report.addViolation({
        ruleName: 'dra-guard-input-error',
        recommendation: error.message,
        fix: 'Fix the manifest so that it can be read.',
        violatingResources: [{ resourceName: '', locations: [`line ${error.line}`], manifestPath: error.file }],
      });
    }
    // 0: clean; 1: findings at or above failOn; 2: unreadable input or bad configuration.
    context.report.submit(result.status === 0 ? 'success' : 'failure');
  }
}

module.exports = { DraGuardValidation };
