// Driver for Gemini CLI's chat compression (`@google/gemini-cli-core` 0.61.0, npm).
//
// Run with the machine's node; it imports the release from the environment's node_modules
// (CTXBENCH_NODE_MODULES) and nothing from ctxbench.
//
// The release's code (the installed package, unmodified; paths under dist/src/):
// - ChatCompressionService.compress (context/chatCompressionService.js:188): no compression
//   while the last prompt's token count is under threshold x tokenLimit(model) (:210;
//   DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5, :22); older function responses over a
//   50,000-token budget truncated to a file (truncateHistoryToBudget, :107, :31); the split
//   keeping the newest 30% of the characters at a user turn (findCompressSplitPoint, :38,
//   COMPRESSION_PRESERVE_THRESHOLD = 0.3, :27); two summary calls (the <state_snapshot> and the
//   "probe" verification, :291); the result rejected when the new history counts more tokens
//   than the last prompt (COMPRESSION_FAILED_INFLATED_TOKEN_COUNT, :350), after which only
//   truncation runs until a compression succeeds;
// - its counter: estimateTokenCountSync and calculateRequestTokenCount
//   (utils/tokenCalculation.js:98, :129: ASCII 0.25 and non-ASCII 1.5 tokens a character);
// - ToolOutputMaskingService.mask (context/toolOutputMaskingService.js:49), which the client
//   runs after the compression check before every request (core/client.js:469): once the tool
//   outputs older than the latest turn pass 50,000 tokens (DEFAULT_TOOL_PROTECTION_THRESHOLD,
//   :10), the older ones are replaced by a <tool_output_masked> preview and written to a file,
//   when at least 30,000 tokens can go (DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD, :11);
// - getInitialChatHistory (utils/environmentContext.js:64), findCompressSplitPoint's tests.
//
// Emulated: GeminiClient's turn around it (core/client.js): tryCompressChat before each request
// (:463, :817: a COMPRESSED history starts a new chat and clears the failure flag, an inflated
// one sets it, a CONTENT_TRUNCATED one replaces the history), the last prompt token count is
// the provider's reported prompt tokens of the previous call (GeminiChat's usageMetadata) or,
// after a new history, its estimateTokenCountSync; the ContextWindowWillOverflow refusal
// (:468: the request's estimate over tokenLimit - last prompt count fails the turn unsent).
// tokenLimit(model) is the model table's (1,048,576 for every Gemini model), so the run's
// window enters as the threshold the CLI reads from settings (`model.compressionThreshold`):
// compression_threshold x limit / tokenLimit(model), the same trigger in tokens. The history
// is the recorded turns as Gemini Contents (user text, model text and functionCall parts, tool
// results as functionResponse parts of one user turn); the system prompt is the
// systemInstruction, outside the history. The environment context's date is fixed
// (Thursday, January 1, 2026), Math.random (the masked outputs' file names) is a seeded
// generator reset at each replay, and the CLI's home and temp folders are scratch folders, so a
// replay is the same on any day and in any process; the summaries are ctxbench's summarizer's.

import os from 'node:os';
import path from 'node:path';
import { askSummary, exceptionText, importFrom, parseArguments, serveReplays, versionOf }
  from './wire.mjs';

const PACKAGE = '@google/gemini-cli-core';
const SCRATCH = path.join(os.tmpdir(), 'ctxbench-gemini-cli');
process.env.HOME = path.join(SCRATCH, 'home');
process.env.GEMINI_CLI_NO_RELAUNCH = 'true';
const FIXED_DATE = 'Thursday, January 1, 2026';
Date.prototype.toLocaleDateString = function fixedDate() {
  return FIXED_DATE;
};
let seed = 0;
function reseed() {
  seed = 0x2545f491;
}
Math.random = function seeded() { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const { ChatCompressionService } = await importFrom(
  PACKAGE, 'dist/src/context/chatCompressionService.js');
const { CompressionStatus } = await importFrom(PACKAGE, 'dist/src/core/turn.js');
const { tokenLimit } = await importFrom(PACKAGE, 'dist/src/core/tokenLimits.js');
const { estimateTokenCountSync, calculateRequestTokenCount } = await importFrom(
  PACKAGE, 'dist/src/utils/tokenCalculation.js');
const { DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD } = await importFrom(
  PACKAGE, 'dist/src/config/config.js');
const { ToolOutputMaskingService } = await importFrom(
  PACKAGE, 'dist/src/context/toolOutputMaskingService.js');
const VERSION = versionOf(PACKAGE);

const partsOf = (contents) => contents.flatMap((c) => c.parts || []);

class Replay {
  constructor(request) {
    const cfg = request.config;
    this.model = cfg.model;
    this.limit = cfg.token_limit ?? request.window;
    this.threshold = cfg.compression_threshold;
    this.fraction = (this.threshold * this.limit) / tokenLimit(this.model);
    this.overflowCheck = cfg.overflow_check;
    this.masking = cfg.tool_output_masking;
    this.maskingConfig = { protectionThresholdTokens: cfg.masking_protection_tokens,
      minPrunableThresholdTokens: cfg.masking_min_prunable_tokens,
      protectLatestTurn: cfg.masking_protect_latest_turn };
    reseed();
    this.service = new ChatCompressionService();
    this.masker = new ToolOutputMaskingService();
    this.masked = 0;
    this.system = [];
    this.history = [];
    this.pending = []; // this turn's request: it joins the history when the next call starts
    this.owner = new WeakMap(); // a part of ours -> the history position it came from
    this.responses = new Map(); // a functionResponse id -> {id, text}
    this.lastPromptTokenCount = 0;
    this.hasFailedCompressionAttempt = false;
    this.truncations = 0;
    this.summaries = 0;
    this.compressions = 0;
    this.summarizing = [];
    this.trace = String(request.trace_id);
    const replay = this;
    this.config = {
      get config() { return this; },
      model: this.model,
      getModel: () => replay.model,
      getActiveModel: () => replay.model,
      getCompressionThreshold: async () => replay.fraction,
      getBaseLlmClient: () => ({ generateContent: (req) => replay.summarize(req) }),
      getContentGenerator: () => ({
        countTokens: async () => { throw new Error('offline: no countTokens API'); },
      }),
      getToolOutputMaskingConfig: async () => replay.maskingConfig,
      getHookSystem: () => undefined,
      getEnableHooks: () => false,
      getMessageBus: () => undefined,
      getNextCompressionTruncationId: () => ++replay.truncations,
      // Config.getTruncateToolOutputThreshold (config/config.js:2585), with the run's limit
      getTruncateToolOutputThreshold: () => Math.min(
        4 * (replay.limit - replay.lastPromptTokenCount), DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD),
      storage: { getProjectTempDir: () => path.join(SCRATCH, 'project') },
      getIncludeDirectoryTree: () => false,
      getSessionMemory: () => '',
      getUsageStatisticsEnabled: () => false,
      getSessionId: () => 'ctxbench-replay',
      isInteractive: () => false,
      getExperiments: () => undefined,
      getContentGeneratorConfig: () => undefined,
      getApprovedPlanPath: () => undefined,
    };
  }

  // -- recorded messages as Gemini Contents ---------------------------------------------------
  contentsOf(messages) {
    const out = [];
    for (const m of messages) {
      if (m.role === 'system') {
        this.system.push(m.id);
        continue;
      }
      if (m.role === 'tool') {
        let id = m.tool_call_id || `call_${m.id}`;
        if (this.responses.has(id)) id = `${id}_${m.id}`;
        this.responses.set(id, { id: m.id, text: m.content || '' });
        const part = { functionResponse: { id, name: m.name || 'tool',
          response: { output: m.content || '' } } };
        const last = out[out.length - 1];
        if (last && last.role === 'user' && last.parts.every((p) => p.functionResponse)) {
          last.parts.push(part);
        } else {
          out.push({ role: 'user', parts: [part] });
        }
        continue;
      }
      const parts = [];
      if (m.role === 'assistant') {
        if (m.content) parts.push({ text: m.content });
        for (const call of m.tool_calls || []) {
          parts.push({ functionCall: { id: call.id, name: call.name,
            args: parseArguments(call.arguments) } });
        }
        if (!parts.length) parts.push({ text: '' });
      } else {
        parts.push({ text: m.content || '' });
      }
      for (const part of parts) this.owner.set(part, m.id);
      out.push({ role: m.role === 'assistant' ? 'model' : 'user', parts });
    }
    return out;
  }

  /** Protocol items for Contents: a recorded message by reference (a truncated tool output
   * as its new content), a part of the release's own (the snapshot, its acknowledgement) new. */
  items(contents) {
    const out = [];
    let previous = null;
    for (const content of contents) {
      for (const part of content.parts || []) {
        let id = this.owner.get(part);
        let text = null;
        if (id === undefined && part.functionResponse) {
          const known = this.responses.get(part.functionResponse.id);
          if (known) {
            id = known.id;
            const output = part.functionResponse.response?.output;
            if (typeof output === 'string' && output !== known.text) text = output;
          }
        }
        if (id === undefined) {
          out.push({ role: content.role === 'model' ? 'assistant' : 'user',
            content: part.text ?? JSON.stringify(part) });
          previous = null;
          continue;
        }
        if (id === previous) continue; // another part of the same message
        out.push(text === null ? { ref: id } : { ref: id, content: text });
        previous = id;
      }
    }
    return out;
  }

  prompt(contents) {
    return [...this.system.map((id) => ({ ref: id })), ...this.items(contents)];
  }

  // -- the summary calls (BaseLlmClient.generateContent) --------------------------------------
  async summarize(req) {
    const contents = req.contents || [];
    const verify = String(req.promptId || '').endsWith('-verify');
    // the history the service hands the summarizer, then its own turns (instruction, snapshot)
    const history = contents.slice(0, verify ? -2 : -1);
    const own = contents.slice(history.length).map((c) => partsOf([c]).map((p) => p.text || '')
      .join('\n')).join('\n\n');
    const system = req.systemInstruction?.text || '';
    const reply = await askSummary(verify ? 'verify' : 'state_snapshot',
      `${system}\n\n${own}`, { messages: this.items(history),
        key: verify ? 'gemini_cli.verify' : 'gemini_cli.snapshot', sendMaxTokens: false });
    this.summaries += 1;
    if (!reply.ok) throw new Error(String(reply.error || 'summary failed'));
    return { candidates: [{ content: { role: 'model', parts: [{ text: reply.text }] } }] };
  }

  // -- a call ----------------------------------------------------------------------------------
  async call(request) {
    const last = request.last_call;
    if (last && last.ok && last.prompt_tokens) {
      this.lastPromptTokenCount = Number(last.prompt_tokens); // usageMetadata.promptTokenCount
    }
    this.history.push(...this.pending);
    // the model's turn joins the history; what follows it is this turn's request
    const append = request.append;
    let cut = 0;
    for (let i = append.length - 1; i >= 0; i -= 1) {
      if (append[i].role === 'assistant') { cut = i + 1; break; }
    }
    this.history.push(...this.contentsOf(append.slice(0, cut)));
    this.pending = this.contentsOf(append.slice(cut));
    const base = this.prompt([...this.history, ...this.pending]);
    const steps = [];
    let exception = null;
    let status = 'none';
    try {
      const info = await this.tryCompressChat(request.call);
      const code = info.compressionStatus;
      status = CompressionStatus[code];
      if (code === CompressionStatus.COMPRESSED || code === CompressionStatus.CONTENT_TRUNCATED) {
        const after = this.prompt([...this.history, ...this.pending]);
        if (JSON.stringify(after) !== JSON.stringify(base)) {
          steps.push({ layer: code === CompressionStatus.COMPRESSED ? 'chat_compression'
            : 'truncation', messages: after,
            note: `last prompt ${info.originalTokenCount} -> ${info.newTokenCount} tokens` });
        }
      }
      if (this.masking) { // GeminiClient.tryMaskToolOutputs (core/client.js:858)
        const before = this.prompt([...this.history, ...this.pending]);
        const result = await this.masker.mask(this.history, this.config);
        if (result.maskedCount > 0) {
          this.history = result.newHistory; // setHistory
          this.lastPromptTokenCount = estimateTokenCountSync(partsOf(this.history));
          this.masked += result.maskedCount;
          const after = this.prompt([...this.history, ...this.pending]);
          if (JSON.stringify(after) !== JSON.stringify(before)) {
            steps.push({ layer: 'tool_output_masking', messages: after,
              note: `${result.maskedCount} output(s) masked, ~${result.tokensSaved} tokens saved` });
          }
        }
      }
      if (this.overflowCheck) {
        const remaining = this.limit - this.lastPromptTokenCount;
        const estimate = await calculateRequestTokenCount(partsOf(this.pending),
          this.config.getContentGenerator(), this.model);
        if (estimate > remaining) {
          exception = `ContextWindowWillOverflow: the request's ${estimate} estimated tokens `
            + `exceed the ${remaining} remaining (core/client.js:468)`;
        }
      }
    } catch (error) {
      exception = exceptionText(error);
    }
    const sent = [...this.history, ...this.pending];
    const reply = { op: 'prompt', base, steps, info: {
      gemini_tokens: estimateTokenCountSync(partsOf(sent)),
      last_prompt_tokens: this.lastPromptTokenCount, status,
      compressions: this.compressions, summaries: this.summaries, masked: this.masked,
      failed_compression: this.hasFailedCompressionAttempt } };
    if (exception) reply.exception = exception;
    return reply;
  }

  /** GeminiClient.tryCompressChat (core/client.js:817) on our chat. */
  async tryCompressChat(call) {
    const chat = {
      getHistory: () => this.history,
      getLastPromptTokenCount: () => this.lastPromptTokenCount,
    };
    const { newHistory, info } = await this.service.compress(chat, `${this.trace}#${call}`,
      false, this.model, this.config, this.hasFailedCompressionAttempt);
    if (info.compressionStatus === CompressionStatus.COMPRESSION_FAILED_INFLATED_TOKEN_COUNT) {
      this.hasFailedCompressionAttempt = true;
    } else if (info.compressionStatus === CompressionStatus.COMPRESSED && newHistory) {
      this.history = newHistory; // startChat(newHistory)
      this.hasFailedCompressionAttempt = false;
      this.compressions += 1;
      this.lastPromptTokenCount = estimateTokenCountSync(partsOf(this.history));
    } else if (info.compressionStatus === CompressionStatus.CONTENT_TRUNCATED && newHistory) {
      this.history = newHistory; // setHistory
      this.lastPromptTokenCount = estimateTokenCountSync(partsOf(this.history));
    }
    return info;
  }
}

await serveReplays((request) => new Replay(request), 'gemini_cli', VERSION);
