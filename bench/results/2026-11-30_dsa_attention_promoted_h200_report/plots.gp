if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
  set terminal pngcairo noenhanced size 1000,500
} else {
  set terminal png noenhanced size 1000,500
}
set datafile separator whitespace
reset
set output 'latency.png'
set title 'dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64: latency per workload'
set xlabel 'workload index (dataset order)'
set ylabel 'latency (us)'
set logscale y
set grid
set key outside right top
plot 'latency.dat' index 0 using 1:2 with points title 'khk_dsa_attention', '' index 1 using 1:2 with points title 'torch_vec_dsa_sparse_attention'
set output
reset
set output 'speedup.png'
set title 'speedup against khk_dsa_attention (sorted)'
set xlabel 'percent of workloads compared'
set ylabel 'khk_dsa_attention latency / candidate latency'
set logscale y
set grid
set key outside right top
plot 'speedup.dat' index 0 using 1:2 with linespoints title 'torch_vec_dsa_sparse_attention', 1 with lines dashtype 2 linecolor rgb 'gray40' notitle
set output
