from agent_tui.cli import main
import sys

sys.exit(main())
