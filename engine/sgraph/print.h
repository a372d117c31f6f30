// The text form of an sGraph, the way a user reads a kernel. parse.h reads it back;
// print(parse(t)) == t for text that print produced. docs/sgraph.md has the full description.
//
//   sgraph      := { line "\n" }              blank lines and "# …" comments are ignored
//   line        := "input" NAME ":" type
//                | "kernel" INT ":" NAME ":" DTYPE "=" OP "(" NAME { "," NAME } { "," attr } ")"
//                | "kernel" INT ":" "custom" "grid" "=" "[" [ dim { "," dim } ] "]" [ "loop" "=" dim ]
//                | NAME "=" "load" NAME "map" map                        (in a custom kernel)
//                | NAME "=" OP "(" NAME [ "," NAME ] { "," attr } ")"     (block op on tiles)
//                | NAME "=" ACC "(" NAME { "," attr } ")"                 (accumulator)
//                | "save" NAME ":" DTYPE "=" NAME "map" map             (custom kernel output)
//                | "output" NAME { "," NAME }
//   map         := "{" "grid" ":" ( "-" | entry { entry } ) "," "loop" ":" choice "}"
//   entry       := choice "->" dim            data dim (or ?var) -> the grid dim of that size
//   choice      := INT | "-" | "?" NAME       a data dim, none, or an open choice variable
//   attr        := "axis" "=" [ "-" ] INT | "keepdims" "=" ( "true" | "false" )
//   type        := DTYPE "[" [ dim { "," dim } ] "]"
//   dim         := a dim expression over names and integers with + - * / and parentheses
//   OP          := a prism op name (matmul, add, exp, sum, …); ACC := sum_accumulate |
//                  max_accumulate | rms_accumulate; DTYPE := f32 | f16 | bf16
//
// Kernels are numbered 0, 1, … in order. Grid dims not named in a load's map replicate the tile;
// in a save's map they are cross-block reductions (leading partial axes). Every op line ends with
// a comment giving its derived type (a load's tile, a save's whole tensor); the parser ignores it.
#pragma once
#include <string>

#include "engine/sgraph/sgraph.h"

namespace prism::sgraph {

std::string print(const SGraph& graph);
// "{grid: 1->g1, loop: 0}"
std::string map_str(const Map& map, const CustomKernel& kernel);

}  // namespace prism::sgraph
