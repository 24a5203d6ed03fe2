// The conformance suite (connection_conformance.h) over the verbs transport on fake NICs
// (verbs_on_fake_nics.h): ranks are threads of one process around the in-memory fabric, so
// the two cases that SIGKILL a rank skip; every other case runs. With the transport's own
// window, and with two slots of 4 KiB (flow control on every message).
#include "transport/verbs_on_fake_nics.h"

namespace coll::test {

INSTANTIATE_TEST_SUITE_P(VerbsFake, ConnectionConformance,
                         ::testing::Values(verbsOnFakeNics("fake_nics", defaultVerbsWindow()),
                                           verbsOnFakeNics("fake_nics_tiny_window", tinyVerbsWindow())),
                         transportParamName);

}  // namespace coll::test
