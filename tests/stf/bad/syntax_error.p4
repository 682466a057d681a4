/* Deliberately broken: a missing semicolon. The STF runner must exit 2 with the front end's
 * file:line:col message. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> x }
