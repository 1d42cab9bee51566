// The tracking web UI's page (HTML, CSS and JavaScript in one), served at / by `shoal server`.
#pragma once

namespace shoal::track {

const char* UiPage();

}  // namespace shoal::track
