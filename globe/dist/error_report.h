// One report of an error that several ranks raise alike.
//
// When every rank of a job hits the same mistake (a shape error in code they all run), each would
// print the same traceback: N copies on N ranks. Under globe-launch the ranks of a node share a run
// directory (env GLOBE_RUN_DIR); there each rank files its error text, the first one prints it, and
// a later rank prints its own only when it differs. The launcher then names, in one line, the ranks
// whose error was the same as the one shown (tools/launch/parent.cpp). Without the launcher, or on
// a node whose run directory this rank cannot write, every rank prints its own, as before.
#pragma once

#include <string>

namespace globe::dist {

// Files `text` (a traceback, or an error's message without the rank) as this rank's error and says
// whether this rank should print it: true for the first rank to file one, for a text that differs
// from the first one's, and whenever there is no run directory to file it in. Texts are compared
// without the "(rank R)" that ends every globe::Error, so each rank naming itself still reads alike.
//
// The files, in GLOBE_RUN_DIR: error.R holds "rank R\n" then the text; first_error is a hard link
// to the first rank's (link() is an atomic "create if absent", so exactly one rank is first).
bool print_error_here(const std::string& text);

}  // namespace globe::dist
