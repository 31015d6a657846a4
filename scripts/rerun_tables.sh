#!/usr/bin/env bash
# Reruns of the README quality tables for the chunkers whose output changed (naive-500t v2, chop v2,
# recursive v2, paragraph v3, mg/lgmgc v2, semantic v2 vs buffer_by=text, lumber v2).
# Env: OUT (report folder), WORKSPACE (caches), LG_WORKSPACE (a workspace whose LG runs are cached already),
# ONLY="name name" (just these runs).
set -u
cd "$(dirname "$0")/.."
export CHUNKLENS_PROGRESS=0 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=.venv/bin/python
D=${OUT:-artifacts/rerun}; mkdir -p "$D"
run() { local name=$1; shift; [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || return 0; nice $PY -m core bench "$@" --out $D/$name.json > $D/$name.log 2> $D/$name.err; echo "$name rc=$?" >> $D/done; }
W=${WORKSPACE:-$HOME/.chunklens-bench}
E="--workspace $W/eval"
run chroma_truncate $E --data ../shared/data/chroma_eval --chunkers naive-500t,naive-500t:size=250:overlap=125,recursive,semantic,semantic:buffer_by=text --k 1,5,10
run sample_rule_plain --workspace $W/sample --data sample_data/qa --join --chunkers naive-500t,chop,chop:retrieval=filter --k 1,3,10 --llm rule
run sample_rule_qualified --workspace $W/sample --data sample_data/qa --join --chunkers naive-500t,chop,chop:retrieval=filter --k 1,3,10 --llm rule --qualify-queries
S=naive-500t,chop,chop:use_title=true,chop:retrieval=boost,chop:retrieval=filter,chop:use_title=true:retrieval=filter
run emanual_plain --workspace $W/emanual --data ../shared/data/emanual_galaxy --chunkers $S --k 1,3,10
run emanual_qualified --workspace $W/emanual --data ../shared/data/emanual_galaxy --chunkers $S --k 1,3,10 --qualify-queries
run emanual_joined_qualified --workspace $W/emanual --data ../shared/data/emanual_galaxy --join --chunkers naive-500t,chop,chop:retrieval=filter --k 1,3,10 --qualify-queries
specs() {
  local s="semantic,semantic:buffer_by=text"
  for T in 200 300 500; do s="$s,recursive:theta=$T,paragraph:theta=$T,mg:theta=$T,lg:theta=$T,lgmgc:theta=$T"; done
  echo "$s"
}
B="--workspace ${LG_WORKSPACE:-$W/lgmgc} --scorer-dtype bfloat16 --k 1,2,5,10,20"
run chroma3 $B --data ../shared/data/chroma_eval --doc-ids chatlogs,state_of_the_union,wikitexts --chunkers "$(specs)"
run covid20 $B --data ../shared/data/covid_qa --max-docs 20 --chunkers "$(specs),lgmgc:theta=300:min_words=150"
run chroma_window $E --data ../shared/data/chroma_eval --chunkers naive-500t,naive-500t:size=250:overlap=125,recursive,semantic --k 1,5,10 --long-text window
echo all >> $D/done
