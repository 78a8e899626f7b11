# Frozen-encoder features of one fold, for the variants that train only a head on them (the lite
# variants: `reranklab variants`; VariantSpec.needs_cache). `train` and `rerank` of those variants
# read this cache (see cache_for); for every other variant they do not depend on it.
from reranklab.models.registry import get_variant


def cache_dir(w):
    return cell_of(w).path("cache", f"fold{w.fold}")


def cache_for(w):
    """The fold's frozen-feature cache when the variant reads one, else nothing."""
    return [cache_dir(w)] if get_variant(w.variant).needs_cache else []


def encode_params(w):
    # Only what changes the features (and how they are computed): encoder, max length, the head's fields.
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    keep = ("encoder", "device", "eval_batch_size", "threads")
    return as_json({"variant": w.variant, "max_length": int(w.max_length), "training": {k: cell["training"][k] for k in keep}})


rule encode:
    input:
        examples=lambda w: examples_for(w),
        candidates="results/first_stage/{dataset}/candidates.run",
        folds="results/splits/{dataset}/folds.json",
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
    output:
        directory("results/cache/{dataset}/" + CELL_DIR + "/fold{fold}"),
    log:
        "results/logs/encode/{dataset}/" + CELL_DIR + "/fold{fold}.log",
    message:
        "Encoding the training pairs and test candidates of {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir} once with the frozen encoder of {wildcards.variant}"
    threads: threads_for_models()
    resources:
        gpu=1,
    params:
        settings=encode_params,
    conda:
        CONDA_ENV
    shell:
        "reranklab encode --examples {input.examples} --candidates {input.candidates} --folds {input.folds}"
        " --fold {wildcards.fold} --queries {input.queries} --corpus {input.corpus} --out-dir {output}"
        " --threads {threads} --params {params.settings:q} > {log} 2>&1"
