#!/usr/bin/env python3
"""Writes tests/llama/data/tokenizer/: byte-level BPE tokenizers trained here with Hugging Face
`tokenizers` on Debian's fortunes, and the ids `tokenizers` gives for a set of texts, for
test_tokenizer (which then needs no Python package).

  llama3.json   Llama 3's layout: Split(Llama 3's pattern, isolated) then ByteLevel without its own
                regex, ignore_merges, special tokens <|begin_of_text|> <|end_of_text|>
  gpt2.json     GPT-2's layout: ByteLevel with its built-in pattern, no special tokens
  llama2.model  a SentencePiece BPE model (Llama 2's kind: byte fallback, "▁" for spaces), trained
                with the `sentencepiece` package on the same text
  golden.json   {"texts": [...], "llama3": [[ids], ...], "gpt2": [[ids], ...], "llama2": [[ids], ...]}

Needs the peers' environment: scripts/setup_peers.sh, then
    .venv-peers/bin/python scripts/golden/make_tokenizer_golden.py
"""
import json
import os

import sentencepiece
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>"]

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces, trailing spaces   ",
    "numbers: 1234567 and 3.14159, 2026-12-07",
    "I'LL say it: don't, can't, we've, they're, she'd, I'm",
    "tabs\tand\nnewlines\n\n\nand\r\nwindows",
    "naïve café — 日本語 テキスト 🙂 emoji",
    "<|begin_of_text|>Q: what is a global tensor?<|end_of_text|>",
    "x<|end_of_text|><|end_of_text|>y",
    "",
    " ",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "Q: Why did the chicken cross the road?\nA: To get to the other side.",
]


def passage():
    """4000 characters of fortunes the training did not see (from the end of the collection)."""
    with open("/usr/share/games/fortunes/zippy", encoding="utf-8", errors="replace") as f:
        return f.read()[-4000:]


def corpus():
    d = "/usr/share/games/fortunes"
    names = sorted(n for n in os.listdir(d) if "." not in n and n not in ("chinese", "tang300", "song100"))
    text = ""
    for n in names:
        with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
            text += f.read()
        if len(text) > 600_000:
            break
    return [text[i:i + 10_000] for i in range(0, len(text), 10_000)]


def train(kind):
    tok = Tokenizer(models.BPE(ignore_merges=(kind == "llama3")))
    if kind == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, min_frequency=2, show_progress=False,
                                  special_tokens=SPECIALS if kind == "llama3" else [],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    return tok


def main():
    out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "llama", "data", "tokenizer")
    os.makedirs(out, exist_ok=True)
    texts = TEXTS + [passage()]
    golden = {"tokenizers": tokenizers.__version__, "texts": texts}
    for kind in ("llama3", "gpt2"):
        tok = train(kind)
        tok.save(os.path.join(out, kind + ".json"))
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        for t, i in zip(texts, ids):
            assert tok.decode(i, skip_special_tokens=False) == t, (kind, t)
        golden[kind] = ids
        print(kind, tok.get_vocab_size(), [len(i) for i in ids])
    prefix = os.path.join(out, "llama2")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(line for chunk in corpus() for line in chunk.split("\n") if line), model_prefix=prefix,
        vocab_size=500, model_type="bpe", byte_fallback=True, character_coverage=1.0, num_threads=1,
        bos_id=1, eos_id=2, unk_id=0, pad_id=-1, minloglevel=2,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True)  # Llama 2's
    os.remove(prefix + ".vocab")
    sp = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
    golden["sentencepiece"] = sentencepiece.__version__
    golden["llama2"] = [sp.encode(t) for t in texts]
    golden["llama2_decoded"] = [sp.decode(i) for i in golden["llama2"]]
    print("llama2", sp.get_piece_size(), [len(i) for i in golden["llama2"]])
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
