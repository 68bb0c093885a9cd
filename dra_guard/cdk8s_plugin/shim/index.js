'use strict';
// Written by `dra-guard init cdk8s`; commit it with the app.
//
// cdk8s.yaml names this folder by a path relative to the app (`package:
// ./.dra-guard/cdk8s-plugin`), so the same file works on every machine and in CI.  When
// `cdk8s synth` loads it, it asks a Python where the dra-guard installed there keeps its
// cdk8s validation plugin, and loads that one: no path of the machine `init` ran on is
// written anywhere in the project.
//
// The Python asked: $DRA_GUARD_PYTHON alone when it is set; else, first that answers, the
// interpreter of cdk8s.yaml's `app:` (`.venv/bin/python main.py`, `pipenv run python
// main.py`), ./.venv, $VIRTUAL_ENV, then python3 and python on PATH.  Found none: the
// validation fails, saying what was tried.

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const PROBE = 'import dra_guard.cli.init as s; print(s.cdk8s_plugin_dir())';
const VENV_PYTHON = process.platform === 'win32' ? path.join('Scripts', 'python.exe') : path.join('bin', 'python');

function isPython(word) {
  return /^python[0-9.]*(\.exe)?$/i.test(path.basename(word));
}

// A program named with a folder is relative to the app; a bare name is looked up in PATH.
function program(cwd, word) {
  return /[\\/]/.test(word) ? path.resolve(cwd, word) : word;
}

// The command that starts the app's interpreter, from `app:` in cdk8s.yaml: its first word
// when that is a Python, or `<tool> run python...` (pipenv, poetry, uv) anywhere in it.
function appPython(cwd) {
  let text;
  try {
    text = fs.readFileSync(path.join(cwd, 'cdk8s.yaml'), 'utf-8');
  } catch (error) {
    return undefined;
  }
  const match = /^app:[ \t]*(.*)$/m.exec(text);
  if (!match) return undefined;
  let command = match[1].replace(/\s+#.*$/, '').trim();
  if (/^(["']).*\1$/.test(command)) command = command.slice(1, -1);
  const words = command.split(/\s+/).filter(Boolean);
  if (words.length > 0 && isPython(words[0])) return [program(cwd, words[0])];
  for (let index = 0; index + 2 < words.length; index += 1) {
    if (words[index + 1] === 'run' && isPython(words[index + 2])) {
      return [program(cwd, words[index]), 'run', words[index + 2]];
    }
  }
  return undefined;
}

function pythons(cwd) {
  if (process.env.DRA_GUARD_PYTHON) return [[program(cwd, process.env.DRA_GUARD_PYTHON)]];
  const found = [];
  const app = appPython(cwd);
  if (app) found.push(app);
  found.push([path.join(cwd, '.venv', VENV_PYTHON)]);
  if (process.env.VIRTUAL_ENV) found.push([path.join(process.env.VIRTUAL_ENV, VENV_PYTHON)]);
  found.push(['python3'], ['python']);
  return found;
}

function locate(cwd) {
  const tried = [];
  for (const command of pythons(cwd)) {
    const result = spawnSync(command[0], [...command.slice(1), '-c', PROBE], {
      cwd, encoding: 'utf-8', timeout: 120000,
    });
    const lines = result.status === 0 ? result.stdout.trim().split(/\r?\n/) : [];
    const dir = lines[lines.length - 1];
    if (dir && fs.existsSync(path.join(dir, 'index.js'))) return { dir };
    const why = result.error
      ? result.error.code || String(result.error)
      : `exit ${result.status}: ${(result.stderr || '').trim().split(/\r?\n/).pop() || 'no plugin folder printed'}`;
    tried.push(`${command.join(' ')} (${why})`);
  }
  return { tried };
}

const located = locate(process.cwd());
if (located.dir) {
  module.exports = require(located.dir);
} else {
  // Loading still succeeds, so that the synth reports why it cannot validate, and fails.
  class DraGuardValidation {
    async validate(context) {
      context.logger.log('dra-guard: no Python with dra-guard installed was found to load the cdk8s ' +
        `plugin from; tried:\n  ${located.tried.join('\n  ')}\n` +
        'Install dra-guard in the app\'s virtualenv, or set $DRA_GUARD_PYTHON to a Python that has it.');
      context.report.submit('failure');
    }
  }
  module.exports = { DraGuardValidation };
}
