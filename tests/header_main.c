/* tests/header_main.c — main() of the header test; the work happens at
 * compile time in the generated hdr_*.c files. */
int main(void) { return 0; }
