// util/enum_names.h: the list of names an error gives for one to four values, and parse_enum's value
// or error. (The backend's own lists are checked through the recipe: Recipe.ErrorsNameFileLineAndField,
// Recipe.AttentionKernelsDefaultToAutoAndTheCpuRefusesTheCudaOnes.)
#include <vector>

#include "test_support.h"
#include "util/enum_names.h"
#include "util/error.h"

namespace ct {
namespace {

enum class Colour { red, green, blue, grey };

const char* colour_name(Colour c) {
  switch (c) {
    case Colour::red: return "red";
    case Colour::green: return "green";
    case Colour::blue: return "blue";
    case Colour::grey: return "grey";
  }
  return "?";
}

TEST(EnumNames, ChoicesAreCommasThenOr) {
  constexpr Colour one[] = {Colour::red};
  constexpr Colour two[] = {Colour::red, Colour::green};
  constexpr Colour three[] = {Colour::red, Colour::green, Colour::blue};
  const std::vector<Colour> four{Colour::red, Colour::green, Colour::blue, Colour::grey};
  EXPECT_EQ(enum_choices(one, colour_name), "\"red\"");
  EXPECT_EQ(enum_choices(two, colour_name), "\"red\" or \"green\"");
  EXPECT_EQ(enum_choices(three, colour_name), "\"red\", \"green\" or \"blue\"");
  EXPECT_EQ(enum_choices(four, colour_name), "\"red\", \"green\", \"blue\" or \"grey\"");
}

TEST(EnumNames, ParseFindsTheValueOrNamesTheChoices) {
  constexpr Colour three[] = {Colour::red, Colour::green, Colour::blue};
  EXPECT_EQ(parse_enum(three, colour_name, "green", "--colour"), Colour::green);
  std::string error;
  try {
    parse_enum(three, colour_name, "grey", "--colour");
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "--colour: expected \"red\", \"green\" or \"blue\", got \"grey\"");
}

}  // namespace
}  // namespace ct
