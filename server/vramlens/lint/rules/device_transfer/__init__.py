"""Host-to-device copies: constant tensors built on the CPU and copied to the GPU again and again."""
