// Internal pieces of the HLO parser shared by parser.cc and attribute_parser.cc: shape parsing,
// the per-instruction parse context, and the attribute table. Not a public API.
#ifndef XSHARD_TEXT_PARSER_INTERNAL_H_
#define XSHARD_TEXT_PARSER_INTERNAL_H_

#include <set>
#include <string>
#include <vector>

#include "xshard/ir/instruction.h"
#include "xshard/text/lexer.h"

namespace xs::text_internal {

// Deepest nesting of tuple shapes, anonymous operands and brackets the parser accepts (keeps
// recursion bounded on any input).
inline constexpr int kMaxDepth = 64;

// f32[2,3]{1,0}, (f32[], s32[2]), token[], pred[<=4], f32[?], bf16[8]{0:T(128)}.
StatusOr<Shape> ParseShape(Lexer& lex, int depth = 0);
// True when a shape starts at the lexer position ('(' or a dtype name followed by '[').
bool AtShape(Lexer& lex);
// {1,2,3} or {} (also used by the header parser).
StatusOr<std::vector<int64_t>> ParseIntList(Lexer& lex, std::string_view what);

// A reference to a name resolved after the enclosing computation (operands, control
// predecessors) or module (called computations) is parsed; `pos` is for error messages.
struct NameRef {
  std::string name;
  size_t pos = 0;
};
struct CallRef {
  Instruction* inst;
  CallRole role;
  NameRef ref;
};

// What parsing one instruction's attributes produces besides Instruction::attrs.
struct AttrSink {
  Instruction* inst;
  std::vector<CallRef>* calls;              // module-level pending computation references
  std::vector<NameRef> control_predecessors;
  std::set<std::string, std::less<>> seen;  // attribute names given so far (each may come once)
};

// Parses `name=value` at the lexer position (the name not yet consumed) into sink; a name given
// twice on one instruction is an error (as XLA's parser: which value counts would be a guess).
Status ParseAttribute(Lexer& lex, AttrSink& sink);

// Attribute value parsers (attribute_values.cc); each reads the value after '=' into sink.inst
// (or sink.calls / sink.control_predecessors) and reports errors at the offending character.
StatusOr<bool> ParseBool(Lexer& lex, std::string_view name);          // true / false
StatusOr<int64_t> ParseInt(Lexer& lex, std::string_view name);        // -12
StatusOr<std::string> ParseString(Lexer& lex);                        // "C \"escaped\""
StatusOr<std::string> ParseName(Lexer& lex, std::string_view what);   // %name or name
StatusOr<std::vector<NameRef>> ParseNameList(Lexer& lex, std::string_view what);  // {%a, b}
Status ParsePadding(Lexer& lex, AttrSink& s);             // 0_1x2_-1_1
Status ParseWindow(Lexer& lex, AttrSink& s);              // {size=3x3 stride=2x2 pad=1_1x0_0}
Status ParseSlice(Lexer& lex, AttrSink& s);               // {[0:4], [1:8:2]}
Status ParseDimLabels(Lexer& lex, AttrSink& s);           // b01f_01io->b01f
Status ParseReplicaGroups(Lexer& lex, AttrSink& s);       // {{0,1},{2,3}} or [2,2]<=[4]
Status ParseSourceTargetPairs(Lexer& lex, AttrSink& s);   // {{0,1},{1,0}}
Status ParseFrontendAttributes(Lexer& lex, AttrSink& s);  // {k="v", n={...}}
Status ParseSharding(Lexer& lex, AttrSink& s);            // {devices=[2,1]0,1}
Status ParseOperandPrecision(Lexer& lex, AttrSink& s);    // {default,high}

}  // namespace xs::text_internal

#endif  // XSHARD_TEXT_PARSER_INTERNAL_H_
