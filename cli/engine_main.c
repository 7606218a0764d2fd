/* cli/engine_main.c — `kvscope-engine`, the program behind `kvscope engine`.
 *
 *   kvscope engine --help           (kvscope execs this program; see engine_exec.c)
 *   build/cli/kvscope-engine --help (the same, run directly)
 *
 * It holds the reference decode engine and everything CUDA it links (cuBLAS,
 * NCCL, CUPTI through libtrace), so that the `kvscope` binary links none.
 */
#include "cli.h"

int main(int argc, char **argv) { return kvs_cmd_engine(argc, argv); }
