#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "harness/board.h"
#include "util/error.h"

namespace ct::cli {

void add_board_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("board", "Rank results by the round's score, with each entry's gate verdict");
  struct Options {
    std::vector<std::string> results;
    int round = 0;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  cmd->add_option("results", opts->results, "result.json files or run folders holding one")->required();
  cmd->add_option("--round", opts->round,
                  "1: rank by val_bpb; 2: by the min-max composite of val_bpb and CORE "
                  "(default: the round the results were run under)")
      ->check(CLI::IsMember({1, 2}));
  cmd->add_flag("--json", opts->json, "Print the board as JSON");
  cmd->callback([opts] {
    std::vector<std::string> skipped;
    std::vector<BoardInput> inputs = load_board_inputs(opts->results, &skipped);
    for (const std::string& folder : skipped)
      std::fprintf(stderr, "board: skipped %s: no result.json (not a run folder, or a run that has not finished)\n",
                   folder.c_str());
    check(!inputs.empty(), "board: none of the ", opts->results.size(), " paths given holds a result.json");
    int round = opts->round ? opts->round : infer_round(inputs);
    Board board = build_board(std::move(inputs), round);
    std::string text = opts->json ? board_json(board).dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n"
                                  : board_table(board);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace ct::cli
