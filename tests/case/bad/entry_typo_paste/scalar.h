/* PolyBench's way of writing a float literal: SCALAR_VAL(2.0) is 2.0f */
#define SCALAR_VAL(x) x##f
