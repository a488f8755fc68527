// The driver side of ctxbench's line protocol for npm releases (Node's standard library only;
// the same protocol as wire.py, ctxbench/shipped/protocol.py describes it).
//
// The protocol's stdout is taken over before the release is imported: console output and any
// process.stdout.write of the release go to stderr (ctxbench shows its tail on failure), and
// only send() writes protocol lines, synchronously, to file descriptor 1.

import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

process.stdout.write = process.stderr.write.bind(process.stderr);
for (const name of ['log', 'info', 'debug', 'warn']) {
  console[name] = console.error;
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const iterator = lines[Symbol.asyncIterator]();

const pause = new Int32Array(new SharedArrayBuffer(4));

/** One protocol line, written whole: stdout is a non-blocking pipe (Node made it one), so a
 * line longer than the pipe's buffer (a summary request of a long history) is written in parts
 * and a full pipe (EAGAIN) is waited out; a partial line would leave both sides waiting. */
export function send(payload) {
  const data = Buffer.from(`${JSON.stringify(payload)}\n`, 'utf8');
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(1, data, offset, data.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 2); // ctxbench is reading: try again in 2 ms
    }
  }
}

export async function receive() {
  const { value, done } = await iterator.next();
  return done ? null : JSON.parse(value);
}

/** The installed package's folder under the environment's node_modules. */
export function packageDir(name) {
  const root = process.env.CTXBENCH_NODE_MODULES;
  if (!root) {
    throw new Error('CTXBENCH_NODE_MODULES is not set: run this driver through ctxbench');
  }
  return path.join(root, ...name.split('/'));
}

/** Import a file of an installed package by its path (deep files the package does not export). */
export function importFrom(name, file) {
  return import(pathToFileURL(path.join(packageDir(name), file)).href);
}

export function versionOf(name) {
  return JSON.parse(fs.readFileSync(path.join(packageDir(name), 'package.json'), 'utf8')).version;
}

/** Ask ctxbench for a summary (the run's summarizer answers): {ok, text, error}. */
export async function askSummary(layer, prompt, { messages = [], maxTokens = null, key = null,
  sendMaxTokens = true } = {}) {
  send({ op: 'summarize', layer, prompt, messages, max_tokens: maxTokens, sections: [],
    previous_summary: null, send_max_tokens: sendMaxTokens, key });
  const reply = await receive();
  if (!reply || reply.op !== 'summary') {
    throw new Error('ctxbench closed the pipe while a summary was pending');
  }
  return reply;
}

/** A recorded tool call's JSON arguments as an object (anything else under `input`). */
export function parseArguments(text) {
  try {
    const value = JSON.parse(text || '{}');
    return value && typeof value === 'object' && !Array.isArray(value) ? value : { input: value };
  } catch {
    return { input: text };
  }
}

export function exceptionText(error) {
  return `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`;
}

/** Serve one replay object per `start`: its `call` answers calls, its `overflow` (when it has
 * one) overflows. A driver bug is an `error` line, then the process ends. */
export async function serveReplays(make, framework, version) {
  let replay = null;
  for (;;) {
    const request = await receive();
    if (request === null) return;
    try {
      if (request.op === 'start') {
        replay = await make(request);
        send({ op: 'ready', framework, version, notes: [] });
      } else if (request.op === 'call') {
        send(await replay.call(request));
      } else if (request.op === 'overflow') {
        send(replay.overflow ? await replay.overflow(request)
          : { op: 'prompt', steps: [], retry: false, info: {} });
      } else {
        send({ op: 'error', message: `unknown op ${JSON.stringify(request.op)}` });
        return;
      }
    } catch (error) {
      process.stderr.write(`${error?.stack ?? error}\n`);
      send({ op: 'error', message: exceptionText(error) });
      return;
    }
  }
}
