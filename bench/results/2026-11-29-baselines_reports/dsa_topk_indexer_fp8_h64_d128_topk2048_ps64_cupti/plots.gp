if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
  set terminal pngcairo noenhanced size 1000,500
} else {
  set terminal png noenhanced size 1000,500
}
set datafile separator whitespace
reset
set output 'latency.png'
set title 'dsa_topk_indexer_fp8_h64_d128_topk2048_ps64: latency per workload'
set xlabel 'workload index (dataset order)'
set ylabel 'latency (us)'
set logscale y
set grid
set key outside right top
plot 'latency.dat' index 0 using 1:2 with points title 'dsa_topk_indexer_simple_cuda', '' index 1 using 1:2 with points title 'torch_vec_dsa_topk_indexer', '' index 2 using 1:2 with points title 'builtin:definition_reference'
set output
reset
set output 'speedup.png'
set title 'speedup against dsa_topk_indexer_simple_cuda (sorted)'
set xlabel 'percent of workloads compared'
set ylabel 'dsa_topk_indexer_simple_cuda latency / candidate latency'
set logscale y
set grid
set key outside right top
plot 'speedup.dat' index 0 using 1:2 with linespoints title 'torch_vec_dsa_topk_indexer', '' index 1 using 1:2 with linespoints title 'builtin:definition_reference', 1 with lines dashtype 2 linecolor rgb 'gray40' notitle
set output
