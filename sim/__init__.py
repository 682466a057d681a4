"""Virtual-time packet simulator driving the same p4switch pipeline objects as the emulated fabric."""
