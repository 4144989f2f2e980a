from sowctl.cli import main

raise SystemExit(main())
