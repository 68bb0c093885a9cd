'use strict';
// cdk8s-cli validation plugin for dra-guard.
//
// cdk8s synth loads this module from the path in cdk8s.yaml (`validations:`), calls
// validate(context) with the synthesized manifest paths, and fails the synth (exit 2)
// when the report is submitted as 'failure'.  The rules live in Python; this file only
// runs `dra-guard check --format json` and translates its findings into the plugin API.
// It ships inside the dra-guard Python package (`dra-guard init cdk8s` writes its
// installed path into cdk8s.yaml), so nothing is installed or downloaded at synth time.

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const SEVERITIES = ['low', 'medium', 'high', 'critical'];
const EXECUTABLE = process.platform === 'win32' ? 'dra-guard.exe' : 'dra-guard';
const SCRIPTS = process.platform === 'win32' ? 'Scripts' : 'bin';

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch (error) {
    return false;
  }
}

// The interpreter of the cdk8s app (`app: .venv/bin/python main.py` in cdk8s.yaml): a
// dra-guard beside it belongs to the app's own virtualenv.
function appInterpreterDir(cwd) {
  let text;
  try {
    text = fs.readFileSync(path.join(cwd, 'cdk8s.yaml'), 'utf-8');
  } catch (error) {
    return undefined;
  }
  const match = /^app:\s*(?:"([^"]+)"|'([^']+)'|(\S+))/m.exec(text);
  const program = match && (match[1] || match[2] || match[3]);
  if (!program || !program.includes(path.sep)) return undefined;
  return path.dirname(path.resolve(cwd, program));
}

// This file lives at <prefix>/lib/pythonX.Y/site-packages/dra_guard/cdk8s_plugin/ (or
// <prefix>/Lib/site-packages/... on Windows): the dra-guard that shipped it is in <prefix>'s scripts.
function shippedWithDir() {
  const sitePackages = path.resolve(__dirname, '..', '..');
  const candidates = [path.resolve(sitePackages, '..', '..', '..', SCRIPTS), path.resolve(sitePackages, '..', '..', SCRIPTS)];
  return candidates.find((dir) => isExecutable(path.join(dir, EXECUTABLE)));
}

// The dra-guard to run, in this order: the `executable` property, $DRA_GUARD, the app's
// virtualenv (from cdk8s.yaml), $VIRTUAL_ENV, the installation this plugin came from,
// ./.venv, then PATH.
function findExecutable(properties, cwd) {
  const candidates = [];
  if (properties.executable) candidates.push(path.resolve(cwd, properties.executable));
  if (process.env.DRA_GUARD) candidates.push(path.resolve(cwd, process.env.DRA_GUARD));
  const appDir = appInterpreterDir(cwd);
  if (appDir) candidates.push(path.join(appDir, EXECUTABLE));
  if (process.env.VIRTUAL_ENV) candidates.push(path.join(process.env.VIRTUAL_ENV, SCRIPTS, EXECUTABLE));
  const shipped = shippedWithDir();
  if (shipped) candidates.push(path.join(shipped, EXECUTABLE));
  candidates.push(path.join(cwd, '.venv', SCRIPTS, EXECUTABLE));
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir) candidates.push(path.join(dir, EXECUTABLE));
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
    if (context.manifests.length === 0) {
      // `dra-guard check` with no paths would check the whole project directory instead.
      context.logger.log('dra-guard: the app synthesized no manifests; nothing to check.');
      context.report.submit('success', { note: 'no manifests to check' });
      return;
    }
    const cwd = process.cwd();
    const { found, tried } = findExecutable(this.properties, cwd);
    if (!found) {
      context.logger.log(`dra-guard executable not found; tried:\n  ${tried.join('\n  ')}\n` +
        'Install dra-guard in the app\'s virtualenv, or set the plugin property `executable` or $DRA_GUARD.');
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
      const object = finding.object;
      context.report.addViolation({
        ruleName: finding.rule,
        recommendation: `[${finding.severity}] ${object.kind}/${object.namespace || '-'}/` +
          `${object.name || object.generateName || '-'}: ${finding.message}`,
        fix: finding.remediation,
        violatingResources: [{
          resourceName: object.name || object.generateName || '',
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
