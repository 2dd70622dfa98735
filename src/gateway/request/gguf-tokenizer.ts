import { gguf } from "@huggingface/gguf";

/**
 * A GGUF carries its model's vocabulary in its header (tokenizer.ggml.*), so
 * the gateway counts a GGUF model's prompts with the model's own tokens, as
 * llama.cpp will: the header is read once (a local file, or by range
 * requests for a URL) and turned into the tokenizer.json that
 * @huggingface/tokenizers reads. Byte-level BPE vocabularies (llama.cpp's
 * "gpt2" type: Qwen, Llama 3, GPT-2 and most recent models) are counted this
 * way; the others (SentencePiece "llama", WordPiece "bert") are left to the
 * estimate.
 */
export interface GgufTokenizer {
  readonly tokenizerJson: object;
  readonly chatTemplate: string | undefined;
  readonly bosToken: string;
  readonly eosToken: string;
}

// llama_token_type: control and user-defined tokens are matched whole, before the BPE.
const controlToken = 3;
const userDefinedToken = 4;

export async function readGgufTokenizer(location: string): Promise<GgufTokenizer | undefined> {
  const remote = /^https?:\/\//i.test(location);
  const url = remote ? location.replace(/#.*$/, "") : location;
  const { metadata } = await gguf(url, { allowLocalFile: !remote });
  const fields = metadata as unknown as Readonly<Record<string, unknown>>;
  if (fields["tokenizer.ggml.model"] !== "gpt2") return undefined;
  const tokens = fields["tokenizer.ggml.tokens"];
  const merges = fields["tokenizer.ggml.merges"];
  if (!Array.isArray(tokens) || !Array.isArray(merges)) return undefined;
  const types = Array.isArray(fields["tokenizer.ggml.token_type"]) ? (fields["tokenizer.ggml.token_type"] as unknown[]) : [];
  const vocab: Record<string, number> = {};
  const added: object[] = [];
  tokens.forEach((token, id) => {
    if (typeof token !== "string") return;
    vocab[token] = id;
    const type = Number(types[id]);
    if (type === controlToken || type === userDefinedToken) {
      added.push({ id, content: token, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type === controlToken });
    }
  });
  const tokenAt = (key: string): string => {
    const id = fields[key];
    const text = typeof id === "number" || typeof id === "bigint" ? tokens[Number(id)] : undefined;
    return typeof text === "string" ? text : "";
  };
  const template = fields["tokenizer.chat_template"];
  return {
    tokenizerJson: {
      version: "1.0",
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: null,
      decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
      model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab, merges: merges.filter((merge) => typeof merge === "string") },
    },
    chatTemplate: typeof template === "string" ? template : undefined,
    bosToken: tokenAt("tokenizer.ggml.bos_token_id"),
    eosToken: tokenAt("tokenizer.ggml.eos_token_id"),
  };
}
