"""boards: self-checking FPGA prototypes of a fabric (traffic generators and checkers, a UART
report, board tops, targets) and their YoWASP synthesis, place-and-route and packing."""
