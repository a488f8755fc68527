// Driver for pi's compaction (`@earendil-works/pi-coding-agent` 1.6.0, npm).
//
// Run with the machine's node; it imports the release from the environment's node_modules
// (CTXBENCH_NODE_MODULES) and nothing from ctxbench.
//
// The release's code (the installed package, unmodified; paths under dist/core/): the session
// store SessionManager.inMemory (session-manager.js:1385: appendMessage :848, appendCompaction
// :901, buildSessionProjection :1105), and compaction/compaction.js: DEFAULT_COMPACTION_SETTINGS
// (:53: reserveTokens 16,384, keepRecentTokens 20,000), shouldCompact (:173: context tokens
// over contextWindow - reserveTokens), estimateProjectedContextTokens (:137: the last
// assistant's reported usage plus chars/4 of what follows), prepareCompaction (:609: the cut point
// walking back from the newest message until 20,000 estimated tokens, never at a tool result,
// a split turn summarized apart), compact(..., streamFn) (:688: two summary calls for a split turn,
// the read/modified file lists appended); convertToLlm (messages.js:75: the summary as a user
// message between the COMPACTION_SUMMARY_PREFIX/SUFFIX).
//
// Emulated: AgentSession's loop around it (agent-session.js): before each assistant response
// the threshold check and auto compaction (_compactBeforeNextAssistantResponse, :482, and
// _runAutoCompaction, :2626), after an overflow rejection one compact-and-retry
// (_checkCompaction, :2496: a second overflow in the same turn is not retried; a response
// that is not an error clears the flag, :839). The recorded turns are appended as pi messages
// (user text, assistant text and toolCall blocks with the provider's reported usage of the
// call that produced them, toolResult messages); the system prompt stays outside the session.
// The model (contextWindow = the run window) is never called: streamFn, the release's hook
// for the summary request, is answered by ctxbench's summarizer.

import { askSummary, exceptionText, importFrom, parseArguments, serveReplays, versionOf }
  from './wire.mjs';

const PACKAGE = '@earendil-works/pi-coding-agent';
const compaction = await importFrom(PACKAGE, 'dist/core/compaction/compaction.js');
const { SessionManager } = await importFrom(PACKAGE, 'dist/core/session-manager.js');
const { convertToLlm } = await importFrom(PACKAGE, 'dist/core/messages.js');
const VERSION = versionOf(PACKAGE);

const { DEFAULT_COMPACTION_SETTINGS, estimateProjectedContextTokens, estimateTokens,
  prepareCompaction, shouldCompact, compact } = compaction;

/** A pi-ai Usage (cost zero: the replay prices nothing). */
function usage(input = 0, output = 0) {
  return { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

function textOf(message) {
  const content = message.content;
  if (typeof content === 'string') return content;
  return (content || []).map((b) => b.text ?? '').join('');
}

class Replay {
  constructor(request) {
    const cfg = request.config;
    this.settings = {
      ...DEFAULT_COMPACTION_SETTINGS,
      ...(cfg.reserve_tokens !== null ? { reserveTokens: cfg.reserve_tokens } : {}),
      ...(cfg.keep_recent_tokens !== null ? { keepRecentTokens: cfg.keep_recent_tokens } : {}),
    };
    this.model = { provider: 'replayed', id: 'replayed-model', api: 'openai-completions',
      contextWindow: cfg.context_window ?? request.window, maxTokens: request.reserved,
      reasoning: false, input: ['text'] };
    this.session = SessionManager.inMemory('/workspace');
    this.system = [];
    this.owner = new WeakMap(); // a message of ours -> its history position
    this.recovered = false;
    this.compactions = 0;
    this.summaries = 0;
    this.summarizing = [];
    this.clock = 0;
  }

  now() {
    this.clock += 1;
    return this.clock;
  }

  message(m, last) {
    if (m.role === 'tool') {
      return { role: 'toolResult', toolCallId: m.tool_call_id || `call_${m.id}`,
        toolName: m.name || 'tool', content: [{ type: 'text', text: m.content || '' }],
        isError: Boolean(m.failed), timestamp: this.now() };
    }
    if (m.role === 'assistant') {
      const content = [];
      if (m.content) content.push({ type: 'text', text: m.content });
      for (const call of m.tool_calls || []) {
        content.push({ type: 'toolCall', id: call.id, name: call.name,
          arguments: parseArguments(call.arguments) });
      }
      const message = { role: 'assistant', content, provider: 'replayed', model: 'replayed-model',
        api: 'openai-completions', stopReason: content.some((b) => b.type === 'toolCall')
          ? 'toolUse' : 'stop', timestamp: this.now(), usage: usage() };
      if (last && last.ok && last.prompt_tokens) { // the provider's usage of that response
        message.usage = usage(Number(last.prompt_tokens), estimateTokens(message));
      }
      return message;
    }
    return { role: 'user', content: [{ type: 'text', text: m.content || '' }],
      timestamp: this.now() };
  }

  items(messages) {
    const out = [];
    for (const message of messages) {
      const id = this.owner.get(message);
      if (id !== undefined) {
        out.push({ ref: id });
        continue;
      }
      for (const llm of convertToLlm([message])) { // the compaction summary as a user message
        out.push({ role: llm.role === 'assistant' ? 'assistant' : 'user', content: textOf(llm) });
      }
    }
    return out;
  }

  prompt() {
    const messages = this.session.buildSessionProjection().messages
      .filter((m) => m.role !== 'system');
    return [...this.system.map((id) => ({ ref: id })), ...this.items(messages)];
  }

  /** The release's streamFn hook: the summary request answered by ctxbench's summarizer. */
  streamFn() {
    return async (model, context) => {
      const prompt = [context.systemPrompt || '',
        ...(context.messages || []).map((m) => textOf(m))].join('\n\n');
      const split = prompt.includes('# Instructions');
      const reply = await askSummary(split ? 'turn_prefix' : 'compaction', prompt, {
        messages: this.items(this.summarizing), key: split ? 'pi.turn_prefix' : 'pi.summary',
        sendMaxTokens: false });
      this.summaries += 1;
      const message = reply.ok
        ? { role: 'assistant', content: [{ type: 'text', text: reply.text }], stopReason: 'stop',
          usage: usage() }
        : { role: 'assistant', content: [], stopReason: 'error',
          errorMessage: String(reply.error || 'summary failed'), usage: usage() };
      return { result: async () => message };
    };
  }

  /** _runAutoCompaction: prepare, compact with streamFn, append the compaction entry. */
  async runCompaction() {
    const preparation = prepareCompaction(this.session.getBranch(), this.settings);
    if (!preparation) return false;
    this.summarizing = [...preparation.messagesToSummarize, ...preparation.turnPrefixMessages];
    const result = await compact(preparation, this.model, undefined, undefined, undefined,
      undefined, undefined, this.streamFn(), undefined, { enabled: false });
    this.session.appendCompaction(result.summary, result.firstKeptEntryId, result.tokensBefore,
      result.details, false, result.usage);
    this.compactions += 1;
    return true;
  }

  contextTokens() {
    return estimateProjectedContextTokens(this.session.buildSessionProjection(),
      this.session.getBranch()).tokens;
  }

  async call(request) {
    const last = request.last_call;
    if (last && last.ok) this.recovered = false;
    for (const m of request.append) {
      if (m.role === 'system') {
        this.system.push(m.id);
        continue;
      }
      const message = this.message(m, last);
      this.owner.set(message, m.id);
      this.session.appendMessage(message);
    }
    const base = this.prompt();
    const steps = [];
    let exception = null;
    const before = this.contextTokens();
    try {
      if (this.model.contextWindow > 0
          && shouldCompact(before, this.model.contextWindow, this.settings)) {
        if (await this.runCompaction()) {
          steps.push({ layer: 'compaction', messages: this.prompt(),
            note: `threshold: ${before} > ${this.model.contextWindow} - ${this.settings.reserveTokens}` });
        }
      }
    } catch (error) {
      exception = exceptionText(error);
    }
    return this.reply(base, steps, exception, before);
  }

  async overflow() {
    if (this.recovered) {
      return { op: 'prompt', steps: [], retry: false, info: this.info(this.contextTokens()) };
    }
    this.recovered = true;
    const base = this.prompt();
    const before = this.contextTokens();
    try {
      if (await this.runCompaction()) {
        const reply = this.reply(base, [{ layer: 'compaction', messages: this.prompt(),
          note: 'overflow: compact and retry once' }], null, before);
        reply.retry = true;
        return reply;
      }
    } catch (error) {
      return { op: 'prompt', steps: [], retry: false, exception: exceptionText(error),
        info: this.info(before) };
    }
    return { op: 'prompt', steps: [], retry: false, info: this.info(before) };
  }

  info(before) {
    return { pi_tokens: before, compactions: this.compactions, summaries: this.summaries };
  }

  reply(base, steps, exception, before) {
    const reply = { op: 'prompt', base, steps, info: this.info(before) };
    if (exception) reply.exception = exception;
    return reply;
  }
}

await serveReplays((request) => new Replay(request), 'pi', VERSION);
