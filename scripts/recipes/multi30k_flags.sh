# Sourced by the Multi30k recipes (train_tree2seq_multi30k.sh, train_throughput.sh): the model and optimiser flags
# they share, so the throughput is measured on the model the results are trained with. 3+3 layers, d 256, ffn
# 1024, 4 heads (the fairseq_notes CPU baseline), Adam with inverse-sqrt warmup, label smoothing, 4,096 tokens.
MULTI30K_FLAGS=(--share-all-embeddings --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256
  --decoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4
  --decoder-attention-heads 4 --optimizer adam --adam-betas '(0.9,0.98)' --lr 1e-3 --lr-scheduler inverse_sqrt
  --warmup-updates 500 --dropout 0.3 --weight-decay 0.0001 --criterion label_smoothed_cross_entropy
  --label-smoothing 0.1 --max-tokens 4096)
